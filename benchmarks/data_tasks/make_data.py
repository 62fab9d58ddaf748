"""How the data files here were made (run once; the files are committed, do not regenerate casually:
the suite's expected answers are computed from them).

    python benchmarks/data_tasks/make_data.py
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent / "data"
PRODUCTS = {"apple": ("fruit", 0.5, 0.3), "pear": ("fruit", 0.75, 0.4), "bread": ("bakery", 2.2, 1.1),
            "cheese": ("dairy", 6.0, 3.5), "milk": ("dairy", 1.1, 0.6), "plum": ("fruit", 0.3, 0.15)}
NAMES = ["Ada", "Brian", "Chloe", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemal", "Lena"]
TIERS = ["gold", "silver", "bronze"]
REGIONS = ["north", "south", "east", "west"]


def main() -> None:
    rng = random.Random(14)
    customers = [{"customer_id": i + 1, "name": n, "tier": TIERS[i % 3], "city": rng.choice(["Paris", "Lyon", "Nantes"])}
                 for i, n in enumerate(NAMES)]
    (HERE / "customers.json").write_text(json.dumps(customers, indent=1) + "\n")
    products = {p: {"category": c, "unit_price": price, "unit_cost": cost} for p, (c, price, cost) in PRODUCTS.items()}
    (HERE / "products.json").write_text(json.dumps(products, indent=1) + "\n")
    with open(HERE / "sales.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["order_id", "date", "region", "customer_id", "product", "units"])
        for i in range(60):
            month = 1 + i * 6 // 60
            day = rng.randint(1, 28)
            w.writerow([1001 + i, f"2024-{month:02d}-{day:02d}", rng.choice(REGIONS), rng.randint(1, 10),
                        rng.choice(list(PRODUCTS)), rng.randint(1, 12)])
    with open(HERE / "sensors.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["timestamp", "sensor", "temperature", "humidity"])
        for hour in range(24):
            for s, base in (("A", 20.0), ("B", 23.5), ("C", 18.0)):
                temp = round(base + rng.uniform(-3, 3) + (2 if 10 <= hour <= 16 else 0), 1)
                w.writerow([f"2024-03-01T{hour:02d}:00", s, temp, rng.randint(40, 90)])


if __name__ == "__main__":
    main()
