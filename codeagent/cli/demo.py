"""The `codeagent demo` task: a small store's sales and inventory behind three tools.

A tool-calling agent would need dozens of round trips (one per product and month); a code agent
answers in one action that loops over the tools and computes. Without a model endpoint the demo
replays `SCRIPTED_REPLY` through `ScriptedModel`, and says so.
"""

from __future__ import annotations

from collections import Counter

from ..tools.tool import Tool, tool

__all__ = ["TASK", "SCRIPTED_REPLY", "PRODUCTS", "SALES", "STOCK", "demo_tools", "expected_answer", "CALLS"]

MONTHS = ("2024-01", "2024-02", "2024-03")

PRODUCTS: list[dict[str, object]] = [
    {"sku": "A-100", "name": "Trail Backpack", "category": "outdoor", "price": 89.0},
    {"sku": "A-200", "name": "Camping Stove", "category": "outdoor", "price": 54.5},
    {"sku": "A-300", "name": "Headlamp", "category": "outdoor", "price": 24.0},
    {"sku": "B-100", "name": "Espresso Grinder", "category": "kitchen", "price": 129.0},
    {"sku": "B-200", "name": "Cast-Iron Pan", "category": "kitchen", "price": 39.9},
    {"sku": "B-300", "name": "Chef Knife", "category": "kitchen", "price": 74.0},
    {"sku": "C-100", "name": "Desk Lamp", "category": "office", "price": 45.0},
    {"sku": "C-200", "name": "Ergonomic Chair", "category": "office", "price": 249.0},
]

# Units sold per month and region: SALES[sku][month] = {"north": n, "south": m}
SALES: dict[str, dict[str, dict[str, int]]] = {
    "A-100": {"2024-01": {"north": 12, "south": 9}, "2024-02": {"north": 15, "south": 11}, "2024-03": {"north": 21, "south": 17}},
    "A-200": {"2024-01": {"north": 8, "south": 5}, "2024-02": {"north": 7, "south": 6}, "2024-03": {"north": 9, "south": 8}},
    "A-300": {"2024-01": {"north": 30, "south": 25}, "2024-02": {"north": 28, "south": 31}, "2024-03": {"north": 35, "south": 40}},
    "B-100": {"2024-01": {"north": 6, "south": 4}, "2024-02": {"north": 9, "south": 7}, "2024-03": {"north": 11, "south": 10}},
    "B-200": {"2024-01": {"north": 14, "south": 18}, "2024-02": {"north": 12, "south": 15}, "2024-03": {"north": 13, "south": 16}},
    "B-300": {"2024-01": {"north": 10, "south": 8}, "2024-02": {"north": 9, "south": 12}, "2024-03": {"north": 7, "south": 6}},
    "C-100": {"2024-01": {"north": 5, "south": 7}, "2024-02": {"north": 6, "south": 4}, "2024-03": {"north": 5, "south": 6}},
    "C-200": {"2024-01": {"north": 3, "south": 2}, "2024-02": {"north": 4, "south": 3}, "2024-03": {"north": 5, "south": 4}},
}

STOCK: dict[str, int] = {
    "A-100": 25, "A-200": 40, "A-300": 60, "B-100": 12, "B-200": 55, "B-300": 22, "C-100": 30, "C-200": 6,
}

TASK = (
    "Using the store's tools: which product category had the highest revenue in Q1 2024 "
    "(months 2024-01 to 2024-03), and what was that revenue? Also list, sorted by name, the products "
    "that will run out of stock within 30 days at their March 2024 sales rate (March has 31 days). "
    "Answer with a dict with keys 'top_category', 'revenue' (rounded to 2 decimals) and 'restock'."
)

# The reply a capable model gives: the whole analysis in one code action.
SCRIPTED_REPLY = '''Thought: I will fetch every product, sum its Q1 sales across regions, add up revenue per \
category, and compare each product's stock with its March daily sales rate, all in one step.
<code>
products = list_products()
months = ["2024-01", "2024-02", "2024-03"]
revenue = {}
restock = []
for p in products:
    units = {m: sum(get_sales(p["sku"], m).values()) for m in months}
    revenue[p["category"]] = revenue.get(p["category"], 0) + sum(units.values()) * p["price"]
    daily = units["2024-03"] / 31
    if daily > 0 and get_stock(p["sku"]) / daily < 30:
        restock.append(p["name"])
print({category: round(total, 2) for category, total in revenue.items()})
top = max(revenue, key=revenue.get)
final_answer({"top_category": top, "revenue": round(revenue[top], 2), "restock": sorted(restock)})
</code>'''

CALLS: Counter[str] = Counter()  # tool calls made by the last demo run


def _find(sku: str) -> dict[str, object]:
    for p in PRODUCTS:
        if p["sku"] == sku:
            return p
    raise KeyError(f"unknown sku {sku!r}; call list_products() to see the valid ones")


@tool
def list_products(category: str | None = None) -> list[dict]:
    """List the store's products: dicts with keys sku, name, category, price (EUR).

    Args:
        category: only this category ("outdoor", "kitchen" or "office"); all when omitted.
    """
    CALLS["list_products"] += 1
    return [dict(p) for p in PRODUCTS if category is None or p["category"] == category]


@tool
def get_sales(sku: str, month: str) -> dict[str, int]:
    """Units of one product sold in one month ("YYYY-MM"), per region: {"north": n, "south": m}."""
    CALLS["get_sales"] += 1
    _find(sku)
    return dict(SALES[sku].get(month, {"north": 0, "south": 0}))


@tool
def get_stock(sku: str) -> int:
    """Units of one product currently in stock."""
    CALLS["get_stock"] += 1
    _find(sku)
    return STOCK[sku]


def demo_tools() -> list[Tool]:
    return [list_products, get_sales, get_stock]


def expected_answer() -> dict[str, object]:
    """The answer computed directly in Python, to check any model's (or the script's) answer."""
    revenue: dict[str, float] = {}
    restock = []
    for p in PRODUCTS:
        sku = str(p["sku"])
        units = {m: sum(SALES[sku][m].values()) for m in MONTHS}
        revenue[str(p["category"])] = revenue.get(str(p["category"]), 0) + sum(units.values()) * float(p["price"])  # type: ignore[arg-type]
        if STOCK[sku] / (units["2024-03"] / 31) < 30:
            restock.append(str(p["name"]))
    top = max(revenue, key=lambda k: revenue[k])
    return {"top_category": top, "revenue": round(revenue[top], 2), "restock": sorted(restock)}
