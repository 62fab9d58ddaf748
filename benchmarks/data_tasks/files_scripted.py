"""Scripted replies for the data-file suite, per mode: what a competent model would answer.

Code mode reads the files with pandas at their granted path (the same absolute path in every
executor); single-call and tool-calling modes query them through FILE_TOOLS and write the answer
they worked out from the results.
"""

from __future__ import annotations

from typing import Any

from files_suite import DATA_DIR
from scripted import calls, code, one

D = str(DATA_DIR)
LOAD = (f"import pandas as pd\nsales = pd.read_csv('{D}/sales.csv')\n"
        f"products = pd.read_json('{D}/products.json', orient='index')\n"
        "sales = sales.join(products, on='product')\nsales['revenue'] = sales['units'] * sales['unit_price']\n")
SENSORS = f"import pandas as pd\nreadings = pd.read_csv('{D}/sensors.csv')\n"
CUSTOMERS = f"customers = pd.read_json('{D}/customers.json')\n"

CODE: dict[str, list[str]] = {
    "total_revenue": [
        code(f"import pandas as pd\nsales = pd.read_csv('{D}/sales.csv')\n"
             f"products = pd.read_json('{D}/products.json', orient='index')\nprint(sales.head(3))\nprint(products)",
             "Thought: I will look at the two files first."),
        code("sales = sales.join(products, on='product')\n"
             "final_answer(round(float((sales['units'] * sales['unit_price']).sum()), 2))",
             "Thought: join on the product name and sum units times price."),
    ],
    "top_region": [code(LOAD + "final_answer(str(sales.groupby('region')['revenue'].sum().idxmax()))")],
    "gold_revenue": [code(LOAD + CUSTOMERS + "merged = sales.merge(customers, on='customer_id')\n"
                          "final_answer(round(float(merged.loc[merged['tier'] == 'gold', 'revenue'].sum()), 2))")],
    "busiest_month": [code(LOAD + "final_answer(str(sales.groupby(sales['date'].str[:7])['units'].sum().idxmax()))")],
    "top_products": [code(LOAD + "units = sales.groupby('product')['units'].sum().sort_values(ascending=False)\n"
                          "final_answer(units.head(3).index.tolist())")],
    "sensor_b_mean": [code(SENSORS + "b = readings[readings['sensor'] == 'B']\n"
                           "final_answer(round(float(b['temperature'].mean()), 2))")],
    "humid_readings": [code(SENSORS + "final_answer(int((readings['humidity'] > 70).sum()))")],
    "sensor_a_std": [code(SENSORS + "import numpy as np\n"
                          "a = readings.loc[readings['sensor'] == 'A', 'temperature'].to_numpy()\n"
                          "final_answer(round(float(np.std(a)), 3))")],
    "idle_customers": [code(LOAD + CUSTOMERS +
                            "final_answer(customers.loc[~customers['customer_id'].isin(sales['customer_id']), "
                            "'name'].tolist())")],
    "total_margin": [code(LOAD + "margin = sales['units'] * (sales['unit_price'] - sales['unit_cost'])\n"
                          "final_answer(round(float(margin.sum()), 2))")],
    "sensor_ttest": [code(SENSORS + "from scipy import stats\n"
                          "a = readings.loc[readings['sensor'] == 'A', 'temperature']\n"
                          "b = readings.loc[readings['sensor'] == 'B', 'temperature']\n"
                          "final_answer(round(float(stats.ttest_ind(a, b, equal_var=False).statistic), 2))")],
    "hourly_trend": [code(SENSORS + "import statsmodels.formula.api as smf\n"
                          "readings['hour'] = pd.to_datetime(readings['timestamp']).dt.hour\n"
                          "fit = smf.ols('temperature ~ hour', data=readings[readings['sensor'] == 'A']).fit()\n"
                          "print(fit.params)\nfinal_answer(round(float(fit.params['hour']), 3))")],
    "predict_temperature": [code(SENSORS + "from sklearn.linear_model import LinearRegression\n"
                                 "readings['hour'] = pd.to_datetime(readings['timestamp']).dt.hour\n"
                                 "model = LinearRegression().fit(readings[['hour', 'humidity']], readings['temperature'])\n"
                                 "x = pd.DataFrame({'hour': [12], 'humidity': [60]})\n"
                                 "final_answer(round(float(model.predict(x)[0]), 2))")],
    "region_anova": [code(f"import pandas as pd\nimport statsmodels.api as sm\nimport statsmodels.formula.api as smf\n"
                          f"sales = pd.read_csv('{D}/sales.csv')\n"
                          "table = sm.stats.anova_lm(smf.ols('units ~ C(region)', data=sales).fit(), typ=2)\n"
                          "print(table)\nfinal_answer(round(float(table['PR(>F)'].iloc[0]), 3))")],
    "revenue_chart": [
        code(LOAD + "import matplotlib.pyplot as plt\nmonthly = sales.groupby(sales['date'].str[:7])['revenue'].sum()\n"
             "plt.figure(figsize=(6, 3))\nplt.bar(monthly.index, monthly.values)\nplt.title('Monthly revenue')\n"
             "print(monthly)", "Thought: plot the monthly revenue and look at it."),
        code("final_answer(str(monthly.idxmax()))", "Thought: June is the highest."),
    ],
}

UNITS_BY_PRODUCT = "aggregate(file='sales.csv', column='units', group_by='product')"
ALL_SALES = "read_rows(file='sales.csv', limit=100)"
PRODUCTS = "read_rows(file='products.json')"

SINGLE_CALL: dict[str, list[str]] = {
    "total_revenue": [one(f"{UNITS_BY_PRODUCT}; {PRODUCTS}"), one("final_answer(715.7)")],
    "top_region": [one(f"{ALL_SALES}; {PRODUCTS}"), one("final_answer('east')")],
    "gold_revenue": [one(f"{ALL_SALES}; {PRODUCTS}; read_rows(file='customers.json')"), one("final_answer(461.15)")],
    "busiest_month": [one(ALL_SALES), one("final_answer('2024-01')")],
    "top_products": [one(UNITS_BY_PRODUCT), one("final_answer(['apple', 'cheese', 'bread'])")],
    "sensor_b_mean": [one("aggregate(file='sensors.csv', column='temperature', func='mean', where='sensor == B')"),
                      one("final_answer(24.11)")],
    "humid_readings": [one("aggregate(file='sensors.csv', column='humidity', func='count', where='humidity > 70')"),
                       one("final_answer(28)")],
    "sensor_a_std": [one("aggregate(file='sensors.csv', column='temperature', func='std', where='sensor == A')"),
                     one("final_answer(2.012)")],
    "idle_customers": [one("aggregate(file='sales.csv', column='order_id', func='count', group_by='customer_id'); "
                           "read_rows(file='customers.json')"), one("final_answer(['Kemal', 'Lena'])")],
    "total_margin": [one(f"{UNITS_BY_PRODUCT}; {PRODUCTS}"), one("final_answer(315.2)")],
    "sensor_ttest": [one("read_rows(file='sensors.csv', limit=100)"), one("final_answer(-6.61)")],
    "hourly_trend": [one("read_rows(file='sensors.csv', limit=100)"), one("final_answer(-0.037)")],
    "predict_temperature": [one("read_rows(file='sensors.csv', limit=100)"), one("final_answer(20.77)")],
    "region_anova": [one(ALL_SALES), one("final_answer(0.819)")],
    "revenue_chart": [one(f"{ALL_SALES}; {PRODUCTS}"), one("final_answer('2024-06')")],
}


def _answer(value: Any) -> dict[str, Any]:
    return calls(("final_answer", {"answer": value}))


UNITS = ("aggregate", {"file": "sales.csv", "column": "units", "group_by": "product"})
SALES = ("read_rows", {"file": "sales.csv", "limit": 100})
PRICES = ("read_rows", {"file": "products.json"})

TOOL_CALLING: dict[str, list[Any]] = {
    "total_revenue": [calls(UNITS, PRICES), _answer(715.7)],
    "top_region": [calls(SALES, PRICES), _answer("east")],
    "gold_revenue": [calls(SALES, PRICES, ("read_rows", {"file": "customers.json"})), _answer(461.15)],
    "busiest_month": [calls(SALES), _answer("2024-01")],
    "top_products": [calls(UNITS), _answer(["apple", "cheese", "bread"])],
    "sensor_b_mean": [calls(("aggregate", {"file": "sensors.csv", "column": "temperature", "func": "mean",
                                           "where": "sensor == B"})), _answer(24.11)],
    "humid_readings": [calls(("aggregate", {"file": "sensors.csv", "column": "humidity", "func": "count",
                                            "where": "humidity > 70"})), _answer(28)],
    "sensor_a_std": [calls(("aggregate", {"file": "sensors.csv", "column": "temperature", "func": "std",
                                          "where": "sensor == A"})), _answer(2.012)],
    "idle_customers": [calls(("aggregate", {"file": "sales.csv", "column": "order_id", "func": "count",
                                            "group_by": "customer_id"}), ("read_rows", {"file": "customers.json"})),
                       _answer(["Kemal", "Lena"])],
    "total_margin": [calls(UNITS, PRICES), _answer(315.2)],
    "sensor_ttest": [calls(("read_rows", {"file": "sensors.csv", "limit": 100})), _answer(-6.61)],
    "hourly_trend": [calls(("read_rows", {"file": "sensors.csv", "limit": 100})), _answer(-0.037)],
    "predict_temperature": [calls(("read_rows", {"file": "sensors.csv", "limit": 100})), _answer(20.77)],
    "region_anova": [calls(SALES), _answer(0.819)],
    "revenue_chart": [calls(SALES, PRICES), _answer("2024-06")],
}

SCRIPTED: dict[str, dict[str, list[Any]]] = {"code": CODE, "single_call": SINGLE_CALL, "tool_calling": TOOL_CALLING}
