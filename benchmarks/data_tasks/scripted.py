"""Scripted replies for every task in every mode: what a competent model would answer.

They run when no endpoint is given, so the harness (agents, tools, checkers, the report) is
exercised in CI. A few replies are deliberately wrong first (an assignment in single-call mode, a
prose reply in tool-calling mode) to show the recovery in the report.
"""

from __future__ import annotations

from typing import Any


def code(body: str, thought: str = "Thought: I will use the tools.") -> str:
    return f"{thought}\n<code>\n{body}\n</code>"


def one(line: str) -> str:
    return f"Thought: next call.\n<code>{line}</code>"


def calls(*items: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": args} for name, args in items]}


CODE: dict[str, list[str]] = {
    "order_city": [code('order = get_order(1003)\nfinal_answer(get_customer(order["customer_id"])["city"])')],
    "brian_units": [code("final_answer(sum(o['quantity'] for o in get_orders(2)))")],
    "paris_names": [code("names = [c['name'] for c in list_customers(city='Paris')]\nprint(names)"),
                    code("final_answer(names)", "Thought: that is the list.")],
    "order_total": [code("o = get_order(1003)\nfinal_answer(o['quantity'] * product_info(o['product'])['price'])")],
    "ada_spent": [code("final_answer(sum(o['quantity'] * product_info(o['product'])['price'] for o in get_orders(1)))")],
    "fruit_report": [code(
        "parts = [f\"{p}: {product_info(p)['price']}\" for p in list_products('fruit')]\nfinal_answer('; '.join(parts))"
    )],
    "most_orders": [code(
        "counts = {c['name']: len(get_orders(c['id'])) for c in list_customers()}\nprint(counts)"
    ), code("final_answer(max(counts, key=counts.get))", "Thought: Brian has the most.")],
    "lyon_revenue": [code(
        "total = 0\nfor c in list_customers(city='Lyon'):\n    for o in get_orders(c['id']):\n"
        "        total += o['quantity'] * product_info(o['product'])['price']\nfinal_answer(round(total, 2))"
    )],
    "apple_buyers": [code(
        "cities = sorted({c['city'] for c in list_customers() if any(o['product'] == 'apple' "
        "for o in get_orders(c['id']))})\nfinal_answer(cities)"
    )],
}

SINGLE_CALL: dict[str, list[str]] = {
    "order_city": [one("order = get_order(1003)"), one("get_order(1003)"), one("get_customer(2)"),
                   one("final_answer('Lyon')")],
    "brian_units": [one("get_orders(2)"), one("final_answer(11)")],
    "paris_names": [one("list_customers(city='Paris')"), one("final_answer(['Ada', 'Chloe'])")],
    "order_total": [one("get_order(1003)"), one("product_info('pear')"), one("final_answer(4.5)")],
    "ada_spent": [one("get_orders(1)"), one("product_info('apple'); product_info('cheese')"),
                  one("final_answer(8.0)")],
    "fruit_report": [one("list_products('fruit')"),
                     one("product_info('apple'); product_info('pear'); product_info('plum')"),
                     one("final_answer('apple: 0.5; pear: 0.75; plum: 0.3')")],
    "most_orders": [one("list_customers()"), one("get_orders(1); get_orders(2); get_orders(3); get_orders(4)"),
                    one("final_answer('Brian')")],
    "lyon_revenue": [one("list_customers(city='Lyon')"), one("get_orders(2); get_orders(4)"),
                     one("product_info('pear'); product_info('bread'); product_info('apple'); product_info('cheese')"),
                     one("final_answer(22.4)")],
    "apple_buyers": [one("list_customers()"), one("get_orders(1); get_orders(2); get_orders(3); get_orders(4)"),
                     one("final_answer(['Paris', 'Lyon'])")],
}

TOOL_CALLING: dict[str, list[Any]] = {
    "order_city": [calls(("get_order", {"order_id": 1003})), calls(("get_customer", {"customer_id": 2})),
                   calls(("final_answer", {"answer": "Lyon"}))],
    "brian_units": [calls(("get_orders", {"customer_id": 2})), calls(("final_answer", {"answer": 11}))],
    "paris_names": [calls(("list_customers", {"city": "Paris"})),
                    calls(("final_answer", {"answer": ["Ada", "Chloe"]}))],
    "order_total": ["The order total is 4.5 euros.", calls(("get_order", {"order_id": 1003})),
                    calls(("product_info", {"product": "pear"})), calls(("final_answer", {"answer": 4.5}))],
    "ada_spent": [calls(("get_orders", {"customer_id": 1})),
                  calls(("product_info", {"product": "apple"}), ("product_info", {"product": "cheese"})),
                  calls(("final_answer", {"answer": 8.0}))],
    "fruit_report": [calls(("list_products", {"category": "fruit"})),
                     calls(*[("product_info", {"product": p}) for p in ("apple", "pear", "plum")]),
                     calls(("final_answer", {"answer": "apple: 0.5; pear: 0.75; plum: 0.3"}))],
    "most_orders": [calls(("list_customers", {})), calls(*[("get_orders", {"customer_id": i}) for i in (1, 2, 3, 4)]),
                    calls(("final_answer", {"answer": "Brian"}))],
    "lyon_revenue": [calls(("list_customers", {"city": "Lyon"})),
                     calls(("get_orders", {"customer_id": 2}), ("get_orders", {"customer_id": 4})),
                     calls(*[("product_info", {"product": p}) for p in ("pear", "bread", "apple", "cheese")]),
                     calls(("final_answer", {"answer": 22.4}))],
    "apple_buyers": [calls(("list_customers", {})), calls(*[("get_orders", {"customer_id": i}) for i in (1, 2, 3, 4)]),
                     calls(("final_answer", {"answer": ["Paris", "Lyon"]}))],
}

SCRIPTED: dict[str, dict[str, list[Any]]] = {"code": CODE, "single_call": SINGLE_CALL, "tool_calling": TOOL_CALLING}
