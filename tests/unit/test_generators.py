import random
import re
from datetime import date, timedelta
from decimal import Decimal

from ingestion import generators
from ingestion.seed import SeedSize, customers, products, sales
from lakehouse import domain

SIZE = SeedSize.for_lines(2_000)
DAY = date(2026, 11, 28)
END = generators.history_end(DAY)


def _dataset(seed, day=DAY):
    catalog = list(products(seed, SIZE, day))
    prices = [(p["product_id"], p["unit_price"]) for p in catalog]
    return list(customers(seed, SIZE, day)), catalog, list(sales(seed, SIZE, prices, day))


def test_same_seed_same_data_and_other_seed_other_data():
    assert _dataset(42) == _dataset(42)
    assert _dataset(42)[2] != _dataset(43)[2]


def test_the_history_is_the_year_up_to_the_day_it_is_seeded():
    """Every day of the year before the seed's day has sales, so a chart of them has no
    gap up to the live workload's first day; seeded a day later, the same rows move a day."""
    _, _, lines = _dataset(42)
    days = {line["transaction_ts"].date() for line in lines}
    assert max(days) == DAY - timedelta(days=1)
    assert min(days) >= DAY - timedelta(days=generators.SEED_HISTORY_DAYS)
    assert len(days) >= generators.SEED_HISTORY_DAYS - 10  # 2,000 lines: a few days may have none

    later = _dataset(42, DAY + timedelta(days=1))[2]
    assert [line["transaction_ts"] - timedelta(days=1) for line in later] == [
        line["transaction_ts"] for line in lines
    ]


def test_sizes_follow_the_flag():
    people, catalog, lines = _dataset(1)
    assert (len(people), len(catalog), len(lines)) == (200, 40, 2_000)
    assert SeedSize.for_lines(1_000_000) == SeedSize(1_000_000, 100_000, 20_000)


def test_keys_are_unique_and_references_resolve():
    people, catalog, lines = _dataset(3)
    assert len({c["customer_id"] for c in people}) == len(people)
    assert len({p["sku"] for p in catalog}) == len(catalog)
    keys = [(line["order_id"], line["line_item_id"]) for line in lines]
    assert len(set(keys)) == len(keys)
    assert {line["customer_id"] for line in lines} <= {c["customer_id"] for c in people}
    assert {line["product_id"] for line in lines} <= {p["product_id"] for p in catalog}


def test_money_is_exact_and_business_rules_hold():
    _, catalog, lines = _dataset(5)
    prices = {p["product_id"]: p["unit_price"] for p in catalog}
    for line in lines:
        assert isinstance(line["unit_price"], Decimal) and line["unit_price"].as_tuple().exponent == -2
        assert line["unit_price"] == prices[line["product_id"]]
        assert 1 <= line["quantity"] <= 5
        assert Decimal(0) <= line["discount"] <= line["unit_price"] * line["quantity"]
        assert line["channel"] in domain.CHANNELS
        assert line["status"] in domain.ORDER_STATUSES
        assert (line["store_id"] is not None) == (line["channel"] == "store")
        assert line["transaction_ts"] < END
        assert line["transaction_ts"].utcoffset().total_seconds() == 0


def test_customers_are_plausible():
    people, _, _ = _dataset(9)
    regions = {loc[3] for loc in generators.LOCATIONS}
    for person in people:
        assert re.fullmatch(r"[a-z]+\.[a-z]+\.\d+@example\.com", person["email"])
        assert person["region"] in regions
        assert person["loyalty_tier"] in generators.LOYALTY_TIERS
        assert person["created_at"] == person["updated_ts"]


def test_click_sessions_are_ordered_and_well_formed():
    rng = random.Random(11)
    start = END
    for _ in range(200):
        session = generators.click_session(rng, [1, 2, 3], [10, 20], start)
        assert session[0]["event_type"] == "page_view"
        assert len({e["session_id"] for e in session}) == 1
        assert [e["event_ts"] for e in session] == sorted(e["event_ts"] for e in session)
        for event in session:
            assert event["event_type"] in domain.EVENT_TYPES
            assert event["device"] in generators.DEVICES
        types = [e["event_type"] for e in session]
        if "purchase" in types:
            assert types.index("checkout") < types.index("purchase")


def test_inventory_never_goes_negative():
    rng, stock = random.Random(13), {}
    for _ in range(5_000):
        update = generators.inventory_update(rng, stock, ["SKU-1", "SKU-2"], END)
        assert update["quantity_on_hand"] >= 0
        assert update["reason"] in generators.INVENTORY_REASONS
    assert all(v >= 0 for v in stock.values())


def test_malformed_events_are_each_broken_one_way():
    rng = random.Random(17)
    event = {
        "sku": "SKU-1",
        "location_id": "WH-EU",
        "quantity_on_hand": 3,
        "change_qty": 1,
        "reason": "sale",
        "update_ts": "2026-01-01T00:00:00Z",
    }
    seen = set()
    for _ in range(100):
        kind, payload = generators.malformed(rng, event, "sku")
        seen.add(kind)
        if kind == "not_json":
            assert isinstance(payload, bytes)
        elif kind == "missing_field":
            assert "sku" not in payload
        else:
            assert payload["quantity_on_hand"] == "not-a-hand"
    assert seen == set(generators.MALFORMED_KINDS)
