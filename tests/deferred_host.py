"""The host side of the deferred-escape corpus: the user's tools, the objects the host shares with a
step, and what the host does with the values it gets back (tests/deferred_escape_harness.py runs them).

Everything here is ordinary host code of the kind a user writes around an agent. Nothing here may
itself run a model method on purpose: what it records about a value it got from a step is taken
with exact-type checks only (`plain`, `safe_text`), so a method that runs is the host action's
doing, never the harness's.

Tools (`host_tools`), all realistic: a weather client holding an API key (`forecast`: builds a
signed URL "...?key=" + KEY + "&city=" + city), `verify` (compares a code with the API key from the
environment), `count` (len), `rank` (sorted), `label` (str), `describe` (an f-string), `to_json`
(json.dumps), `book` (pydantic coercion), `save_table` (df.to_csv into the tool's own folder),
`read_note` (os.fspath + open in the tool's own folder), `chart` (a matplotlib plot on the host),
`search` (strip/lower on the query), `lookup` (a dict lookup), `total` (sum + round),
`send_email` ("@" in to, concatenation), `catalog` / `frame` (the tool's own cached dict and
DataFrame, handed out as they are: shared host objects).

Host actions (`HOST_ACTIONS`): "name" or "name@source", source one of output (the last step's
value or final answer), output:N (step N's), var:NAME (get_variables), host:NAME (an object the
host passed in with set_variables, or its own pyplot figure "host:figure"), tool:catalog /
tool:frame (a tool's cached object); lifecycle actions (reset, close, drop, gc, next_step,
set_variables:NAME, variables) take no source.
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import gc
import io
import json
import math
import os
import pickle
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

API_ENV = "CODEAGENT_DEFERRED_API_KEY"  # the API key the host keeps in its environment


# ----------------------------------------------------------------------------- plain data
_SCALARS = frozenset({type(None), bool, int, float, complex, str, bytes})
_CONTAINERS = frozenset({list, tuple, set, frozenset, dict})


def plain(value: Any, depth: int = 0) -> bool:
    """`value` is data the host may hold: exact builtin types (and the wire's Repr), dates and
    Decimals of exact types, numpy arrays and pandas frames of non-object dtypes (or object
    columns of exact str). Exact-type checks only: no method of the value runs here."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if depth > 50:
        return False
    if kind in _CONTAINERS:
        items = [*value.keys(), *value.values()] if kind is dict else list(value)
        return all(plain(v, depth + 1) for v in items)
    name = f"{kind.__module__}.{kind.__qualname__}"
    if name in ("executors.worker.codec.text.Repr", "decimal.Decimal", "datetime.date", "datetime.timedelta"):
        return True
    if name in ("datetime.datetime", "datetime.time"):
        return value.tzinfo is None or type(value.tzinfo) is datetime.timezone
    if name == "numpy.ndarray":
        return value.dtype.kind != "O" or all(type(v) is str for v in value.ravel().tolist())
    if name in ("pandas.core.frame.DataFrame", "pandas.core.series.Series"):
        frame = value.to_frame() if name.endswith("Series") else value
        return all(_plain_column(frame.iloc[:, i]) for i in range(frame.shape[1])) and not frame.attrs
    return False


def _plain_column(column: Any) -> bool:
    if column.dtype.kind != "O":
        return True
    return all(type(v) is str for v in column.tolist())


def safe_text(value: Any) -> str:
    """Text of a value for the canaries, without running its methods: exact str as is, plain
    data as its repr, anything else as its type (str subclasses by their underlying text)."""
    if type(value) is str:
        return value
    if isinstance(value, str):
        return str.__str__(value)  # the characters, not the subclass's __str__
    if type(value) in _SCALARS or (type(value) in _CONTAINERS and plain(value)):
        return repr(value)
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def exception_name(exc: BaseException) -> str:
    kind = type(exc)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


# ----------------------------------------------------------------------------- the tools
@dataclass
class ToolLog:
    """What the tools received (as safe text), for the canaries: a secret handed to a tool."""

    calls: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # arguments that were not plain data


class WeatherClient:
    """A client holding its API key as an attribute, as SDK clients do."""

    def __init__(self, api_key: str) -> None:
        self.api_key = api_key
        self.base_url = "https://api.weather.example/v1/forecast"

    def forecast(self, city: str) -> dict:
        """The forecast for a city."""
        url = self.base_url + "?key=" + self.api_key + "&city=" + city
        return {"temperature_c": 21.5, "request_chars": len(url)}


def host_tools(tool_dir: str, tool_key: str, log: ToolLog) -> tuple[dict[str, Callable[..., Any]], dict[str, Any]]:
    """The user's tools (see the module docstring) and the objects they keep ("tool:catalog",
    "tool:frame"); `tool_dir` is their own folder, outside the model's grants, `tool_key` the
    weather client's API key."""
    import matplotlib.pyplot as plt
    import pandas as pd
    import pydantic

    class Booking(pydantic.BaseModel):
        city: str
        nights: int
        budget: float

    catalog_data = {"items": ["tea", "coffee"], "owner": "shop"}
    frame_data = pd.DataFrame({"item": ["tea", "coffee"], "price": [3.5, 4.0]})
    notes = os.path.join(tool_dir, "notes.txt")
    with open(notes, "w", encoding="utf-8") as f:
        f.write("remember the milk\n")
    lookup_table = {"tea": 3.5, "coffee": 4.0}

    def verify(code: str) -> bool:
        """Whether a code is the service's access code."""
        return code == os.environ.get(API_ENV, "")

    def count(items: list) -> int:
        """How many items."""
        return len(items)

    def rank(items: list) -> list:
        """The items sorted."""
        return sorted(items)

    def label(value: Any) -> str:
        """A value as a label."""
        return str(value)

    def describe(value: Any) -> str:
        """A value described."""
        return f"value: {value}"

    def to_json(value: Any) -> str:
        """A value as JSON."""
        return json.dumps(value)

    def book(city: str, nights: int, budget: float) -> dict:
        """Book a stay."""
        b = Booking(city=city, nights=nights, budget=budget)
        return {"city": b.city, "nights": b.nights, "budget": b.budget}

    def save_table(table: Any) -> int:
        """Save a table (a DataFrame or records) as CSV; the number of rows."""
        df = table if isinstance(table, pd.DataFrame) else pd.DataFrame(table)
        df.to_csv(os.path.join(tool_dir, "table.csv"))
        return len(df)

    def read_note(name: Any) -> str:
        """Read one of the notes."""
        with open(os.path.join(tool_dir, os.fspath(name)), encoding="utf-8") as f:
            return f.read()

    def chart(values: Any) -> str:
        """Plot values; the PNG's size."""
        fig, ax = plt.subplots()
        try:
            ax.plot(values)
            buf = io.BytesIO()
            fig.savefig(buf, format="png")
            return f"{len(buf.getvalue())} bytes"
        finally:
            plt.close(fig)

    def search(query: str, limit: int = 2) -> list:
        """Search the index."""
        q = query.strip().lower()
        return [f"{q}: result {i}" for i in range(limit)]

    def lookup(key: Any) -> Any:
        """A price by item name."""
        return lookup_table.get(key)

    def total(values: list) -> float:
        """The sum of the values, rounded to cents."""
        return round(sum(values), 2)

    def send_email(to: str, body: str) -> str:
        """Send an email."""
        if "@" not in to:
            return "invalid address"
        message = "To: " + to + "\n\n" + body
        return f"sent {len(message)} characters"

    def catalog() -> dict:
        """The shop's catalog."""
        return catalog_data

    def frame() -> Any:
        """The price list as a DataFrame."""
        return frame_data

    client = WeatherClient(tool_key)
    tools: dict[str, Callable[..., Any]] = {
        "forecast": client.forecast, "verify": verify, "count": count, "rank": rank, "label": label,
        "describe": describe, "to_json": to_json, "book": book, "save_table": save_table,
        "read_note": read_note, "chart": chart, "search": search, "lookup": lookup, "total": total,
        "send_email": send_email, "catalog": catalog, "frame": frame,
    }
    shared = {"tool:catalog": catalog_data, "tool:frame": frame_data}
    return {name: _logged(name, fn, log) for name, fn in tools.items()}, shared


def _logged(name: str, fn: Callable[..., Any], log: ToolLog) -> Callable[..., Any]:
    """The tool with its arguments recorded (safely) before it runs."""

    def tool(*args: Any, **kwargs: Any) -> Any:
        values = [*args, *kwargs.values()]
        log.calls.append(f"{name}(" + ", ".join(safe_text(v) for v in values) + ")")
        log.held += [f"{name}: {type(v).__qualname__}" for v in values if not plain(v)]
        return fn(*args, **kwargs)

    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = fn.__doc__
    return tool


TOOL_NAMES = ("forecast", "verify", "count", "rank", "label", "describe", "to_json", "book",
              "save_table", "read_note", "chart", "search", "lookup", "total", "send_email",
              "catalog", "frame")


# ----------------------------------------------------------------------------- host objects
def host_objects(names: tuple[str, ...]) -> dict[str, Any]:
    """Objects the host passes in with set_variables (by variable name)."""
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    made: dict[str, Any] = {}
    for name in names:
        if name == "df":
            made[name] = pd.DataFrame({"city": ["Oslo", "Rome"], "temp": [4.5, 18.0]})
        elif name == "series":
            made[name] = pd.Series([1.0, 2.0, 3.0], name="load")
        elif name == "arr":
            made[name] = np.arange(6.0).reshape(2, 3)
        elif name == "fig":
            made[name], ax = plt.subplots()
            ax.plot([1, 2, 3])
        elif name == "config":
            made[name] = {"units": "metric", "cities": ["Oslo", "Rome"]}
        elif name == "history":
            made[name] = ["hello", "world"]
        else:
            raise ValueError(f"unknown host object {name!r}")
    return made


# ----------------------------------------------------------------------------- host actions
class HostContext:
    """What a host action works with: the session (the executor or the plain namespace), the
    step values, the host's own objects. Subclassed by the harness per mode, which supplies
    execute, variable(s), set_variables, reset, close and runtime (the runtime's own operations)."""

    outputs: list[Any]
    host: dict[str, Any]

    def lifecycle(self, action: str, arg: str) -> None:
        """reset, close, drop (the host lets go of the step values), gc, next_step (a step the
        model did not write), set_variables:NAME (the host overwrites a variable), variables
        (get_variables), runtime:... (what the runtime does around a step)."""
        if action == "runtime":
            self.runtime(arg)
        elif action == "reset":
            self.reset()
        elif action == "close":
            self.close()
        elif action == "drop":
            self.outputs.clear()
        elif action == "next_step":
            self.execute("None")
        elif action == "set_variables":
            self.set_variables({arg: 0})
        elif action == "variables":
            self.variables_text()
        gc.collect()

    def value(self, source: str) -> Any:
        kind, _, arg = source.partition(":")
        if kind == "output":
            return self.outputs[int(arg) - 1] if arg else self.outputs[-1]
        if kind == "var":
            return self.variable(arg)
        if kind in ("host", "tool"):
            return self.host[source if kind == "tool" else arg]
        raise ValueError(f"unknown source {source!r}")


def _print(v: Any) -> str:
    buf = io.StringIO()
    print(v, file=buf)
    return buf.getvalue()


def _pandas() -> Any:
    import pandas as pd

    return pd


def _dataframe(v: Any) -> str:
    import pandas as pd

    return str(pd.DataFrame({"answer": [v, "ok"]}))


def _plot(v: Any) -> str:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        ax.plot(v)
        fig.savefig(io.BytesIO(), format="png")
    finally:
        plt.close(fig)
    return ""


def _draw(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return f"{len(buf.getvalue())} bytes"


def _log_record(v: Any) -> str:
    import logging

    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    logger = logging.getLogger("codeagent-host")
    logger.addHandler(handler)
    try:
        logger.warning("the agent answered %s", v)
    finally:
        logger.removeHandler(handler)
    return buf.getvalue()


def _host_text_io(paths: dict[str, str]) -> str:
    path = os.path.join(paths["tool_dir"], "host-log.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("host log line\n")
    with open(path, encoding="utf-8") as f:
        return f.read()


def _host_secret(paths: dict[str, str]) -> str:
    """The host reads its own secret (its config): what it read is not shown anywhere."""
    with open(paths["secret"], encoding="utf-8") as f:
        f.read()
    return ""


def _host_frame(paths: dict[str, str]) -> str:
    import pandas as pd

    df = pd.DataFrame({"a": [1, 2]})
    return df.to_csv() + df.to_json()


def _np_divide(paths: dict[str, str]) -> str:
    import numpy as np

    return repr(np.array([1.0]) / 0)  # under the host's own floating-point error settings


def _host_warn(paths: dict[str, str]) -> str:
    import warnings

    warnings.warn("host warning", UserWarning, stacklevel=1)
    return ""


# What the host does on its own (no value from a step): name -> function of the canary paths.
HOST_ONLY: dict[str, Callable[[dict[str, str]], str]] = {
    "host_io": _host_text_io, "host_secret": _host_secret, "host_frame": _host_frame,
    "np_divide": _np_divide, "warn": _host_warn,
}


# name -> function of the value; each returns the text the host made of it (or "").
VALUE_ACTIONS: dict[str, Callable[[Any], Any]] = {
    "print": _print,
    "str": str,
    "repr": repr,
    "fstring": lambda v: f"answer: {v}",
    "format_spec": lambda v: f"{v:>12}",
    "eq": lambda v: v == "expected",
    "lt": lambda v: v < 10,
    "hash": hash,
    "dict_key": lambda v: {v: 1},
    "len": len,
    "bool": lambda v: bool(v),
    "list": list,
    "sorted": sorted,
    "contains": lambda v: "x" in v,
    "getitem": lambda v: v[0],
    "keys": lambda v: list(v.keys()),
    "hasattr": lambda v: hasattr(v, "to_dict"),
    "deepcopy": copy.deepcopy,
    "copy": copy.copy,
    "pickle": pickle.dumps,
    "json": json.dumps,
    "json_default": lambda v: json.dumps(v, default=str),
    "round": round,
    "float": float,
    "int": int,
    "abs": abs,
    "isfinite": math.isfinite,
    "isoformat": lambda v: v.isoformat(),
    "utcoffset": lambda v: v.utcoffset(),
    "exception_only": lambda v: "".join(traceback.format_exception_only(v)),
    "print_exception": lambda v: "".join(traceback.format_exception(v)),
    "dataframe": _dataframe,
    "frame_of": lambda v: str(_pandas().DataFrame(v)),
    "df_head": lambda v: str(v.head()),
    "df_copy": lambda v: v.copy(),
    "bytes": bytes,
    "normalize": lambda v: v.strip().lower(),
    "to_csv": lambda v: v.to_csv(),
    "tolist": lambda v: v.tolist(),
    "df_print": lambda v: str(v),
    "plot": _plot,
    "draw": _draw,
    "logging": _log_record,
    "next": lambda v: next(v),
    "iterate": lambda v: [x for x in v],
}
LIFECYCLE_ACTIONS = ("reset", "close", "drop", "gc", "next_step", "set_variables", "variables", "runtime")


def run_host_action(ctx: HostContext, action: str, paths: dict[str, str]) -> dict[str, Any]:
    """One host action; returns {"action", "text", "error", "plain"} (text: what the host made of
    the value, exact str only). `paths`: the tools' folder and the host's secret file."""
    name, _, source = action.partition("@")
    record: dict[str, Any] = {"action": action, "text": "", "error": None, "plain": True}
    try:
        if name in HOST_ONLY:
            record["text"] = HOST_ONLY[name](paths)
        elif name in VALUE_ACTIONS:
            value = ctx.value(source or "output")
            # the host's own objects (host:..., tool:...) are not model-made, whatever they hold now
            record["plain"] = plain(value) or source.startswith(("host:", "tool:"))
            result = VALUE_ACTIONS[name](value)
            record["text"] = safe_text(result) if type(result) is str or plain(result) else ""
        else:
            base, _, arg = name.partition(":")
            if base not in LIFECYCLE_ACTIONS:
                raise ValueError(f"unknown host action {action!r}")
            ctx.lifecycle(base, arg)
    except BaseException as exc:  # noqa: BLE001 - what the action raised is recorded
        record["error"] = exception_name(exc)
        with contextlib.suppress(BaseException):
            if all(type(a) is str for a in exc.args):
                record["error"] += ": " + " ".join(exc.args)[:300]
    return record
