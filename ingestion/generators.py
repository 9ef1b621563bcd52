"""Deterministic generators of RetailMax source rows and events (pure: no I/O).

Every function takes a `random.Random`, so a seed fixes the data set. Money is Decimal,
timestamps are timezone-aware UTC datetimes.
"""

# Why one module: the generators share one seeded `random.Random` and the domain's value
# lists; one file keeps a seed's whole data set readable in one place.

from __future__ import annotations

import random
import uuid
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from lakehouse.domain import CHANNELS, ORDER_STATUSES

CENT = Decimal("0.01")

# (city, state, country, region)
LOCATIONS = [
    ("New York", "NY", "US", "north_america"),
    ("Austin", "TX", "US", "north_america"),
    ("Seattle", "WA", "US", "north_america"),
    ("Chicago", "IL", "US", "north_america"),
    ("Toronto", "ON", "CA", "north_america"),
    ("Mexico City", "CMX", "MX", "latin_america"),
    ("Sao Paulo", "SP", "BR", "latin_america"),
    ("Buenos Aires", "BA", "AR", "latin_america"),
    ("London", "ENG", "GB", "europe"),
    ("Berlin", "BE", "DE", "europe"),
    ("Paris", "IDF", "FR", "europe"),
    ("Madrid", "MD", "ES", "europe"),
    ("Tokyo", "13", "JP", "asia_pacific"),
    ("Sydney", "NSW", "AU", "asia_pacific"),
    ("Singapore", "SG", "SG", "asia_pacific"),
    ("Mumbai", "MH", "IN", "asia_pacific"),
]
FIRST_NAMES = [
    "Ava",
    "Liam",
    "Noah",
    "Emma",
    "Mia",
    "Lucas",
    "Sofia",
    "Hana",
    "Ravi",
    "Chen",
    "Amara",
    "Mateo",
    "Olga",
    "Yuki",
    "Omar",
    "Zoe",
    "Ines",
    "Kofi",
    "Lena",
    "Arjun",
]
LAST_NAMES = [
    "Smith",
    "Garcia",
    "Muller",
    "Tanaka",
    "Silva",
    "Patel",
    "Kim",
    "Rossi",
    "Dubois",
    "Nguyen",
    "Okafor",
    "Novak",
    "Larsen",
    "Cohen",
    "Singh",
    "Walker",
]
LOYALTY_TIERS = ["bronze", "silver", "gold", "platinum"]
CATEGORIES = {
    "electronics": (
        ["Voltix", "Nordtek", "Brightline"],
        ["Headphones", "Charger", "Speaker", "Smartwatch", "Tablet"],
        (Decimal("15"), Decimal("900")),
    ),
    "home_kitchen": (
        ["Casa", "Hearth & Co"],
        ["Kettle", "Pan", "Blender", "Lamp", "Rug"],
        (Decimal("8"), Decimal("250")),
    ),
    "apparel": (
        ["Threadline", "Urban Fox"],
        ["T-Shirt", "Jacket", "Jeans", "Sneakers"],
        (Decimal("10"), Decimal("180")),
    ),
    "sports": (
        ["Peakform", "Stride"],
        ["Yoga Mat", "Dumbbell", "Bike Helmet", "Tent"],
        (Decimal("12"), Decimal("400")),
    ),
    "beauty": (
        ["Lumen", "Verde"],
        ["Serum", "Shampoo", "Lipstick", "Sunscreen"],
        (Decimal("5"), Decimal("90")),
    ),
    "toys": (
        ["Kidoodle", "Blocksmith"],
        ["Puzzle", "Robot Kit", "Plush", "Board Game"],
        (Decimal("6"), Decimal("120")),
    ),
    "grocery": (
        ["FreshFarm", "Pantry+"],
        ["Coffee", "Olive Oil", "Tea", "Granola"],
        (Decimal("2"), Decimal("40")),
    ),
}
STORE_IDS = [f"ST-{n:03d}" for n in range(1, 21)]
DEVICES = ["desktop", "mobile", "tablet"]
INVENTORY_LOCATIONS = ["WH-EAST", "WH-WEST", "WH-EU", "WH-APAC"] + STORE_IDS[:6]
INVENTORY_REASONS = ["sale", "restock", "return", "adjustment", "damage"]

# The seeded history: the year before the day the seed runs.
SEED_HISTORY_DAYS = 365


def money(rng: random.Random, low: Decimal, high: Decimal) -> Decimal:
    return (low + (high - low) * Decimal(rng.random())).quantize(CENT)


def history_end(day: date) -> datetime:
    """Where the seeded history ends: as `day` begins (UTC). Seeded on `day`, the history
    reaches the live workload's first day, so the charts have no gap, and none of it lies
    in the future, whatever the time of day."""
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def history_ts(rng: random.Random, end: datetime, position: float | None = None) -> datetime:
    """A microsecond-precise UTC instant in the SEED_HISTORY_DAYS before `end`: anywhere in
    them, or `position` (0..1) of the way through them, give or take an hour (so that order
    ids grow with time, as in a real order sequence)."""
    window = SEED_HISTORY_DAYS * 86_400 * 1_000_000
    if position is None:
        micros = rng.randrange(window)
    else:
        micros = min(window - 1, int((1 - position) * window) + rng.randrange(3_600_000_000))
    return end - timedelta(microseconds=micros)


def location(rng: random.Random) -> dict:
    city, state, country, region = rng.choice(LOCATIONS)
    return {"city": city, "state": state, "country": country, "region": region}


def customer(rng: random.Random, customer_id: int, ts: datetime) -> dict:
    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
    born = date(1950, 1, 1) + timedelta(days=rng.randrange(365 * 55))
    return {
        "customer_id": customer_id,
        "first_name": first,
        "last_name": last,
        "email": f"{first}.{last}.{customer_id}@example.com".lower(),
        "phone": f"+1-555-{rng.randrange(10**7):07d}",
        "birth_date": born,
        **location(rng),
        "loyalty_tier": rng.choices(LOYALTY_TIERS, weights=[50, 30, 15, 5])[0],
        "created_at": ts,
        "updated_ts": ts,
    }


def product(rng: random.Random, product_id: int, ts: datetime) -> dict:
    category = rng.choice(sorted(CATEGORIES))
    brands, kinds, (low, high) = CATEGORIES[category]
    brand, kind = rng.choice(brands), rng.choice(kinds)
    return {
        "product_id": product_id,
        "sku": f"SKU-{product_id:07d}",
        "name": f"{brand} {kind} {rng.randrange(100, 999)}",
        "description": f"{kind} by {brand}",
        "category": category,
        "brand": brand,
        "unit_price": money(rng, low, high),
        "active": rng.random() > 0.05,
        "updated_ts": ts,
    }


def order_lines(
    rng: random.Random,
    order_id: int,
    customer_id: int,
    products: list[tuple[int, Decimal]],
    ts: datetime,
    status: str,
) -> list[dict]:
    """One order of 1-4 lines for `customer_id`, priced from (product_id, price) pairs."""
    channel = rng.choices(CHANNELS, weights=[40, 30, 20, 10])[0]
    store = rng.choice(STORE_IDS) if channel == "store" else None
    lines = []
    for line_item_id, (product_id, price) in enumerate(
        rng.sample(products, k=min(len(products), rng.randint(1, 4))), start=1
    ):
        quantity = rng.randint(1, 5)
        discount = (price * quantity * Decimal(rng.choice([0, 0, 0, 5, 10, 15])) / 100).quantize(CENT)
        lines.append(
            {
                "order_id": order_id,
                "line_item_id": line_item_id,
                "customer_id": customer_id,
                "product_id": product_id,
                "quantity": quantity,
                "unit_price": price,
                "discount": discount,
                "channel": channel,
                "store_id": store,
                "status": status,
                "transaction_ts": ts,
                "updated_ts": ts,
            }
        )
    return lines


def seeded_status(rng: random.Random) -> str:
    return rng.choices(ORDER_STATUSES, weights=[5, 85, 6, 4])[0]


def event_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def click_session(
    rng: random.Random, customer_ids: list[int], product_ids: list[int], start: datetime
) -> list[dict]:
    """The events of one browsing session, in time order; some end in a purchase."""
    session_id = event_uuid(rng)
    customer_id = rng.choice(customer_ids) if customer_ids and rng.random() < 0.6 else None
    device = rng.choice(DEVICES)
    steps = ["page_view"] + rng.choices(["product_view", "search", "page_view"], k=rng.randint(1, 6))
    if rng.random() < 0.35:
        steps.append("add_to_cart")
        if rng.random() < 0.15:
            steps.append("remove_from_cart")
        elif rng.random() < 0.6:
            steps += ["checkout"] + (["purchase"] if rng.random() < 0.7 else [])
    events, ts = [], start
    for event_type in steps:
        ts += timedelta(milliseconds=rng.randrange(500, 90_000))
        product_id = (
            rng.choice(product_ids)
            if event_type in ("product_view", "add_to_cart", "remove_from_cart") and product_ids
            else None
        )
        events.append(
            {
                "event_id": event_uuid(rng),
                "session_id": session_id,
                "customer_id": customer_id,
                "event_type": event_type,
                "page_url": f"/{event_type.replace('_', '-')}" + (f"/{product_id}" if product_id else ""),
                "product_id": product_id,
                "search_query": rng.choice(["headphones", "tent", "coffee", "jeans"])
                if event_type == "search"
                else None,
                "device": device,
                "event_ts": ts,
            }
        )
    return events


def inventory_update(
    rng: random.Random, stock: dict[tuple[str, str], int], skus: list[str], ts: datetime
) -> dict:
    """One stock movement; `stock` (sku, location) -> on hand is updated in place."""
    sku, location_id = rng.choice(skus), rng.choice(INVENTORY_LOCATIONS)
    on_hand = stock.get((sku, location_id), 100)
    reason = rng.choices(INVENTORY_REASONS, weights=[60, 20, 8, 8, 4])[0]
    change = {
        "sale": -rng.randint(1, 5),
        "restock": rng.randint(20, 200),
        "return": rng.randint(1, 3),
        "adjustment": rng.randint(-5, 5),
        "damage": -rng.randint(1, 3),
    }[reason]
    change = max(change, -on_hand)
    stock[(sku, location_id)] = on_hand + change
    return {
        "sku": sku,
        "location_id": location_id,
        "quantity_on_hand": on_hand + change,
        "change_qty": change,
        "reason": reason,
        "update_ts": ts,
    }


MALFORMED_KINDS = ("not_json", "missing_field", "wrong_type")


def malformed(rng: random.Random, event: dict, key_field: str) -> tuple[str, bytes | dict]:
    """A broken copy of `event`: raw bytes that are not JSON, or a dict with a defect."""
    kind = rng.choice(MALFORMED_KINDS)
    if kind == "not_json":
        return kind, b"{" + repr(event).encode()[:60]
    broken = dict(event)
    if kind == "missing_field":
        del broken[key_field]
    else:
        wrong = "quantity_on_hand" if "quantity_on_hand" in broken else "event_ts"
        broken[wrong] = "not-a-" + wrong.split("_")[-1]
    return kind, broken
