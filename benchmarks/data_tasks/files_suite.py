"""The data-file suite: pandas/numpy tasks over the CSV and JSON files in data/, given to the agent
through the executor's grants (`Access(read=[DATA_DIR])`), each with an exact expected answer.

    data/sales.csv       60 orders: order_id, date, region, customer_id, product, units
    data/products.json   {product: {category, unit_price, unit_cost}}
    data/customers.json  [{customer_id, name, tier, city}]
    data/sensors.csv     72 hourly readings: timestamp, sensor (A/B/C), temperature, humidity

A CodeAgent reads the files itself (pandas in its executor; scipy, scikit-learn and statsmodels for
the statistics tasks: a t-test, a regression fit and prediction, an ANOVA). Single-call and tool-calling agents
cannot run code, so they get `FILE_TOOLS`: read-only lookups that run on the host (list the files,
their columns, a page of rows, one aggregate with an optional group-by and filter) and must combine
what those return themselves. The expected answers were computed from the committed files with
pandas (make_data.py made them; the test re-derives every answer from the files).
"""

from __future__ import annotations

import operator
import re
from functools import cache
from pathlib import Path
from typing import Any

from suite import Task, number, ordered, text, unordered

from codeagent import tool

DATA_DIR = Path(__file__).resolve().parent / "data"
FILES = ("sales.csv", "products.json", "customers.json", "sensors.csv")
# what the code may import in the restricted executors (the statistics tasks need scipy,
# scikit-learn and statsmodels)
IMPORTS = ["pandas", "numpy", "matplotlib.*", "scipy.*", "sklearn.*", "statsmodels.*"]
# the distributions a Docker image needs for them
PACKAGES = ["numpy", "pandas", "matplotlib", "scipy", "scikit-learn", "statsmodels"]


@cache
def _frame(file: str) -> Any:
    import pandas as pd

    if file not in FILES:
        raise ValueError(f"no file named {file!r}; the files are: {', '.join(FILES)}")
    path = DATA_DIR / file
    if file == "products.json":  # {name: {...}}: one row per product, its name as a column
        return pd.read_json(path, orient="index", precise_float=True).rename_axis("product").reset_index()
    # precise_float: 0.3 stays 0.3 in what the model is shown (pandas' fast parser gives 0.30000000000000004)
    return pd.read_json(path, precise_float=True) if file.endswith(".json") else pd.read_csv(path)


def _plain(value: Any) -> Any:
    """numpy scalars as Python numbers (the tools' results are shown to the model)."""
    return value.item() if hasattr(value, "item") else value


@tool
def list_files() -> list:
    """The data files you can query, with their row counts."""
    return [f"{f} ({len(_frame(f))} rows)" for f in FILES]


@tool
def table_columns(file: str) -> dict:
    """The columns of a data file and their types (e.g. table_columns('sales.csv'))."""
    return {c: str(t) for c, t in _frame(file).dtypes.items()}


@tool
def read_rows(file: str, start: int = 0, limit: int = 20) -> list:
    """Rows of a data file as dicts, `limit` rows (at most 100) from row `start`."""
    rows = _frame(file).iloc[start:start + min(max(limit, 0), 100)]
    return [{k: _plain(v) for k, v in r.items()} for r in rows.to_dict("records")]


_OPS = {"==": operator.eq, "!=": operator.ne, ">=": operator.ge, "<=": operator.le, ">": operator.gt,
        "<": operator.lt}
_WHERE = re.compile(r"\s*(\w+)\s*(==|!=|>=|<=|>|<)\s*['\"]?([^'\"]*?)['\"]?\s*$")
_FUNCS = ("sum", "mean", "count", "min", "max", "std", "nunique")


@tool
def aggregate(file: str, column: str, func: str = "sum", group_by: str = "", where: str = "") -> Any:
    """One aggregate of a column: func is sum, mean, count, min, max, std (population) or nunique.
    group_by: a column to group by (the result is then {group: value}). where: one filter,
    'column op value' with op one of == != > >= < <= (e.g. "sensor == B", "humidity > 70")."""
    frame = _frame(file)
    if func not in _FUNCS:
        raise ValueError(f"func must be one of {', '.join(_FUNCS)}, got {func!r}")
    if where:
        m = _WHERE.match(where)
        if not m or m.group(1) not in frame.columns:
            raise ValueError(f"where must be 'column op value' over a column of {file}, got {where!r}")
        name, op, raw = m.groups()
        value: Any = raw
        try:
            value = float(raw)
        except ValueError:
            pass
        frame = frame[_OPS[op](frame[name], value)]
    for name in (column, group_by):
        if name and name not in frame.columns:
            raise ValueError(f"{file} has no column {name!r}; its columns: {', '.join(frame.columns)}")
    options = {"ddof": 0} if func == "std" else {}
    if group_by:
        series = getattr(frame.groupby(group_by)[column], func)(**options)
        return {str(k): round(float(v), 4) for k, v in series.items()}
    return round(float(getattr(frame[column], func)(**options)), 4)


FILE_TOOLS = [list_files, table_columns, read_rows, aggregate]

FILE_TASKS = [
    Task("total_revenue", "join",
         "Using the data files, what is the total revenue of all orders in sales.csv in euros (units times the "
         "product's unit_price from products.json), rounded to 2 decimals?", 715.7, number(715.7)),
    Task("top_region", "aggregation", "Using the data files, which region has the highest total revenue "
         "(units times unit_price)? Answer with the region's name.", "east", text("east")),
    Task("gold_revenue", "join",
         "Using the data files, how much revenue in euros (units times unit_price) came from customers of the "
         "gold tier (customers.json)? Round to 2 decimals.", 461.15, number(461.15)),
    Task("busiest_month", "aggregation", "Using the data files, in which month were the most units sold? "
         "Answer as YYYY-MM.", "2024-01", text("2024-01")),
    Task("top_products", "ranking", "Using the data files, which 3 products sold the most units? Answer with "
         "a list of their names, most units first.", ["apple", "cheese", "bread"],
         ordered(["apple", "cheese", "bread"])),
    Task("sensor_b_mean", "filtering", "Using the data files, what is the mean temperature of sensor B in "
         "sensors.csv, rounded to 2 decimals?", 24.11, number(24.11)),
    Task("humid_readings", "filtering", "Using the data files, how many readings in sensors.csv have a "
         "humidity above 70?", 28, number(28)),
    Task("sensor_a_std", "numpy", "Using the data files, what is the population standard deviation (numpy's "
         "default, ddof=0) of sensor A's temperature, rounded to 3 decimals?", 2.012, number(2.012)),
    Task("idle_customers", "join", "Using the data files, which customers placed no order at all? Answer with "
         "their names.", ["Kemal", "Lena"], unordered(["Kemal", "Lena"])),
    Task("total_margin", "join", "Using the data files, what is the total margin in euros over all orders: "
         "units times (unit_price minus unit_cost)? Round to 2 decimals.", 315.2, number(315.2)),
    Task("sensor_ttest", "statistics", "Using the data files, run Welch's t-test (unequal variances) "
         "comparing the temperatures of sensor A and sensor B in sensors.csv: what is the t statistic, "
         "rounded to 2 decimals?", -6.61, number(-6.61)),
    Task("hourly_trend", "statistics", "Using the data files, fit an ordinary least squares regression of "
         "sensor A's temperature on the hour of the day (from the timestamp): what is the slope in degrees "
         "per hour, rounded to 3 decimals?", -0.037, number(-0.037)),
    Task("predict_temperature", "statistics", "Using the data files, fit a linear regression of temperature "
         "on hour of the day and humidity over all readings in sensors.csv, and predict the temperature at "
         "hour 12 with humidity 60, rounded to 2 decimals.", 20.77, number(20.77)),
    Task("region_anova", "statistics", "Using the data files, run a one-way ANOVA of units per order across "
         "the regions in sales.csv: what is the p-value, rounded to 3 decimals?", 0.819, number(0.819)),
    Task("revenue_chart", "figure", "Using the data files, plot the monthly revenue (units times unit_price) "
         "as a bar chart, and answer with the month of the highest revenue as YYYY-MM.", "2024-06",
         text("2024-06")),
]
