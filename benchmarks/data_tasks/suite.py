"""The data-task suite: a small shop database behind five read-only tools, and tasks over it.

Every task needs more than one tool (joins across two tools, aggregation, filtering, a formatted
report, a loop over tool results); each has an expected answer and a checker that accepts the
answer's reasonable spellings (numbers within 0.01, text case- and space-insensitive, lists in
any order where order does not matter).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from codeagent import tool

CUSTOMERS = [
    {"id": 1, "name": "Ada", "city": "Paris"},
    {"id": 2, "name": "Brian", "city": "Lyon"},
    {"id": 3, "name": "Chloe", "city": "Paris"},
    {"id": 4, "name": "Dmitri", "city": "Lyon"},
]
ORDERS = [
    {"order_id": 1001, "customer_id": 1, "product": "apple", "quantity": 4},
    {"order_id": 1002, "customer_id": 1, "product": "cheese", "quantity": 1},
    {"order_id": 1003, "customer_id": 2, "product": "pear", "quantity": 6},
    {"order_id": 1004, "customer_id": 3, "product": "apple", "quantity": 2},
    {"order_id": 1005, "customer_id": 2, "product": "bread", "quantity": 2},
    {"order_id": 1006, "customer_id": 2, "product": "apple", "quantity": 3},
    {"order_id": 1007, "customer_id": 4, "product": "cheese", "quantity": 2},
]
PRODUCTS = {
    "apple": {"category": "fruit", "price": 0.5},
    "pear": {"category": "fruit", "price": 0.75},
    "bread": {"category": "bakery", "price": 2.2},
    "cheese": {"category": "dairy", "price": 6.0},
    "plum": {"category": "fruit", "price": 0.3},
}


@tool
def list_customers(city: str = "") -> list:
    """All customers as dicts {id, name, city}; only those in `city` when it is given."""
    return [dict(c) for c in CUSTOMERS if not city or c["city"].lower() == city.lower()]


@tool
def get_customer(customer_id: int) -> dict:
    """One customer {id, name, city} by id."""
    for c in CUSTOMERS:
        if c["id"] == customer_id:
            return dict(c)
    raise KeyError(f"no customer with id {customer_id}")


@tool
def get_orders(customer_id: int) -> list:
    """A customer's orders as dicts {order_id, customer_id, product, quantity}."""
    return [dict(o) for o in ORDERS if o["customer_id"] == customer_id]


@tool
def get_order(order_id: int) -> dict:
    """One order {order_id, customer_id, product, quantity} by its id."""
    for o in ORDERS:
        if o["order_id"] == order_id:
            return dict(o)
    raise KeyError(f"no order with id {order_id}")


@tool
def product_info(product: str) -> dict:
    """A product's {name, category, price} (price in euros per unit)."""
    info = PRODUCTS.get(product.lower())
    if info is None:
        raise KeyError(f"no product named {product!r}; products: {', '.join(PRODUCTS)}")
    return {"name": product.lower(), **info}


@tool
def list_products(category: str = "") -> list:
    """Product names, sorted; only those of `category` (fruit, bakery, dairy) when it is given."""
    return sorted(p for p, i in PRODUCTS.items() if not category or i["category"] == category.lower())


TOOLS = [list_customers, get_customer, get_orders, get_order, product_info, list_products]
TOOL_NAMES = [t.name for t in TOOLS]


# -- answer checkers ------------------------------------------------------------------------------

def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        m = re.fullmatch(r"\s*[€$]?\s*(-?\d+(?:\.\d+)?)\s*(?:€|eur|euros?)?\s*\.?\s*", value.lower())
        return float(m.group(1)) if m else None
    return None


def number(expected: float) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        got = _number(value)
        return got is not None and abs(got - expected) < 0.01

    return check


def _norm(text: Any) -> str:
    return " ".join(str(text).lower().split()).strip(" .")


def text(expected: str) -> Callable[[Any], bool]:
    return lambda value: _norm(value) == _norm(expected)


def unordered(expected: list[str]) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        if isinstance(value, str):
            items = [x for x in re.split(r"[,;\n]| and ", value) if x.strip()]
        elif isinstance(value, (list, tuple, set)):
            items = list(value)
        else:
            return False
        return sorted(_norm(x) for x in items) == sorted(_norm(x) for x in expected)

    return check


def _items(value: Any) -> list[Any] | None:
    if isinstance(value, str):
        return [x for x in re.split(r"[,;\n]| and ", value) if x.strip()]
    if isinstance(value, (list, tuple)):
        return list(value)
    return None


def ordered(expected: list[str]) -> Callable[[Any], bool]:
    """The same items in the same order (a list, or a string of them separated by commas)."""
    def check(value: Any) -> bool:
        items = _items(value)
        return items is not None and [_norm(x) for x in items] == [_norm(x) for x in expected]

    return check


@dataclass(frozen=True)
class Task:
    id: str
    kind: str  # what the task exercises
    prompt: str
    expected: Any
    check: Callable[[Any], bool]


TASKS = [
    Task("order_city", "join", "In which city does the customer who placed order 1003 live?", "Lyon", text("Lyon")),
    Task("brian_units", "aggregation", "How many units in total has customer 2 ordered (sum of quantities)?",
         11, number(11)),
    Task("paris_names", "filtering", "List the names of the customers who live in Paris.", ["Ada", "Chloe"],
         unordered(["Ada", "Chloe"])),
    Task("order_total", "join", "What is the total price in euros of order 1003 (quantity times unit price)?",
         4.5, number(4.5)),
    Task("ada_spent", "loop", "How much did Ada (customer 1) spend in total over all her orders, in euros?",
         8.0, number(8.0)),
    Task("fruit_report", "report",
         "Write a price list of the fruit products: 'name: price' for each, sorted by name, joined by '; ' "
         "(e.g. 'apple: 0.5; pear: 0.75'). Answer with that one string.",
         "apple: 0.5; pear: 0.75; plum: 0.3", text("apple: 0.5; pear: 0.75; plum: 0.3")),
    Task("most_orders", "loop", "Which customer placed the most orders? Answer with the customer's name.",
         "Brian", text("Brian")),
    Task("lyon_revenue", "join+aggregation",
         "What is the total revenue in euros from customers who live in Lyon (all their orders)?", 22.4,
         number(22.4)),
    Task("apple_buyers", "filtering+join", "Which cities do the customers who ordered apples live in? "
         "Answer with the distinct city names.", ["Lyon", "Paris"], unordered(["Lyon", "Paris"])),
]
