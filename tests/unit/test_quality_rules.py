"""Quality rule declarations: what is derived from a table's declaration, and the
mistakes a declaration can make, each refused with a message that says what to fix."""

from __future__ import annotations

import collections
import dataclasses
import json
from datetime import datetime, timedelta
from decimal import Decimal

import pytest

from lakehouse import quality, rules
from medallion.tables import derived_tables
from silver.tables import CUSTOMER_PROFILES, UNIFIED_CUSTOMER_ORDERS


def test_every_table_checks_its_key_first():
    for table in derived_tables():
        names = [r.name for r in table.rules]
        expected = [f"{c} is not null" for c in table.record_key] + [f"{', '.join(table.record_key)} unique"]
        assert names[: len(expected)] == expected
        assert all(r.tier == rules.FAIL for r in table.rules[: len(expected)])


def test_referential_rules_wait_for_the_input_that_brings_the_missing_row():
    waiting = {r.name: r.waits_for for r in UNIFIED_CUSTOMER_ORDERS.rules if r.waits_for}
    assert waiting == {"customer exists": "customers", "product exists": "products"}


def test_a_batch_rule_cannot_quarantine():
    with pytest.raises(ValueError, match="checks the batch as a whole, it has no rows to quarantine"):
        rules.row_count(minimum=1, tier=rules.QUARANTINE)


def test_an_unknown_tier_is_refused():
    with pytest.raises(ValueError, match="tier must be one of"):
        rules.between("quantity", 1, tier="drop")


def test_a_pattern_must_match_the_whole_value():
    with pytest.raises(ValueError, match=r"anchor the pattern with \^\.\.\.\$"):
        rules.matches("email", "@")


def test_a_rule_waits_only_for_an_input_of_its_table():
    with pytest.raises(ValueError, match=r"rules wait for \['suppliers'\], which must be input aliases"):
        dataclasses.replace(
            CUSTOMER_PROFILES,
            expectations=(rules.exists("supplier", "supplier_name", waits_for="suppliers"),),
        )


def test_rule_names_are_distinct_within_a_table():
    with pytest.raises(ValueError, match="rule names .* must be distinct"):
        dataclasses.replace(
            CUSTOMER_PROFILES,
            expectations=(rules.between("lifetime_value", 0), rules.between("lifetime_value", 0)),
        )


def test_freshness_and_future_rules_take_the_clock_at_validation():
    from datetime import datetime, timedelta

    timed = (rules.not_in_future("ts"), rules.fresh("ts", within=timedelta(hours=2)))
    now = datetime(2026, 6, 1, 12, 0)
    assert rules.expectation_parameters(timed, now) == {
        "now": now,
        "fresh_since_7200": datetime(2026, 6, 1, 10, 0),
    }
    assert timed[1].name == "newest ts at most 2 hours old"
    assert [r.depends_on_clock for r in timed + (rules.between("ts", 0),)] == [True, True, False]


def test_data_docs_keep_the_newest_runs_of_each_table(tmp_path):
    def run(root, start):
        page = root / "orders" / "__none__" / start / "spark-orders.json"
        page.parent.mkdir(parents=True)
        page.write_text("{}")

    starts = [f"20261123T1{n:05d}.000000Z" for n in range(5)]
    for start in starts:
        run(tmp_path / "gx" / "uncommitted" / "validations", start)
        run(tmp_path / "docs" / "validations", start)
    quality.forget_old_runs(tmp_path, "orders", keep=2)
    for root in ("gx/uncommitted/validations", "docs/validations"):
        assert sorted(p.name for p in (tmp_path / root / "orders" / "__none__").iterdir()) == starts[-2:]


def _verdict(verdict: quality.Verdict) -> tuple:
    """What a verdict tells a reader, in an order that does not depend on the engine."""

    def text(values):
        return sorted(json.dumps(v, default=str) for v in values)

    quarantined = sorted(tuple(row) for row in verdict.quarantined.collect())
    # The counts a rebuild reconciles with are the kept-out rows', by status.
    statuses = collections.Counter(row[-1] for row in quarantined)
    assert verdict.kept_out == {status: statuses[status] for status in verdict.kept_out}
    return (
        verdict.rows,
        [
            (o.rule.name, o.success, o.unexpected_count, text(o.failing_keys), text(o.samples))
            for o in verdict.outcomes
        ],
        quarantined,
        verdict.kept_out,
    )


def test_the_in_memory_and_the_spark_engine_reach_the_same_verdict(spark, tmp_path):
    """Small batches are validated by GX's pandas engine, large ones by its Spark engine: a
    batch breaking every kind of rule, nulls included, must get one verdict from both."""
    now = datetime(2026, 6, 1, 12)
    columns = (
        "order_id long, line_item_id int, region string, sku string, quantity int, "
        "unit_price decimal(12,2), discount decimal(12,2), line_total decimal(12,2), "
        "status string, channel string, transaction_ts timestamp, last_updated_ts timestamp"
    )
    good = (
        1,
        1,
        "EU",
        "SKU-1",
        2,
        Decimal("10.00"),
        Decimal("0.00"),
        Decimal("20.00"),
        "completed",
        "web",
        now - timedelta(hours=1),
        now - timedelta(days=2),
    )
    lines = [
        good,
        (2, 1, None, "SKU-1", 2, *good[5:]),  # customer not arrived
        (3, 1, "EU", None, 0, *good[5:]),  # no product, no quantity
        (
            3,
            2,
            "EU",
            "SKU-2",
            None,
            Decimal("-1.00"),
            Decimal("0.50"),
            Decimal("-2.50"),
            "lost",
            "fax",
            now + timedelta(days=1),
            None,
        ),  # null quantity: not judged
        (4, 1, "EU", "SKU-3", -3, *good[5:8], "completed", "web", None, good[11]),
        (4, 1, "EU", "SKU-3", 1, *good[5:]),
    ]  # duplicate key
    profiles = [
        (1, "ann@example.com", Decimal("10.00"), now),
        (2, "not an address", None, now),
        (3, None, Decimal("-5.00"), None),
    ]
    batches = [
        (UNIFIED_CUSTOMER_ORDERS, spark.createDataFrame(lines, columns)),
        (
            CUSTOMER_PROFILES,
            spark.createDataFrame(
                profiles,
                "customer_id long, email string, lifetime_value decimal(12,2), last_updated_ts timestamp",
            ),
        ),
    ]
    gate = quality.Gate(tmp_path / "quality", in_memory_rows=1_000)
    for table, batch in batches:
        for rows in (batch, batch.limit(0)):
            verdicts = [
                _verdict(gate.validate(table.name, table.rules, table.record_key, rows, now, engine))
                for engine in ("spark", "pandas")
            ]
            assert verdicts[0] == verdicts[1]
        assert not all(success for _, success, *_ in verdicts[0][1])


def test_a_null_breaks_a_value_rule_unless_the_rule_allows_it(spark, tmp_path):
    """GX's value expectations let nulls pass unjudged: a null channel is not a known one."""
    declared = (
        rules.in_set("channel", ("store", "web")),
        rules.between("discount", 0, name="discount >= 0", nullable=True),
    )
    batch = spark.createDataFrame(
        [(1, "web", None), (2, None, 1.0), (3, "fax", 2.0)], "id long, channel string, discount double"
    )
    gate = quality.Gate(tmp_path / "quality", in_memory_rows=1_000)
    for engine in ("spark", "pandas"):
        channel, discount = gate.validate(
            "nulls", declared, ("id",), batch, datetime(2026, 6, 1), engine
        ).outcomes
        assert (channel.success, channel.unexpected_count) == (False, 2), engine
        assert sorted(key["id"] for key in channel.failing_keys) == [2, 3], engine
        assert discount.success, engine


def test_the_email_rule_reports_why_each_address_fails(spark, tmp_path):
    """E-mail addresses are judged by a maintained library, not a regex, and each failing row
    carries the library's reason."""
    rule = next(r for r in CUSTOMER_PROFILES.rules if r.name == "email is a valid address")
    batch = spark.createDataFrame(
        [
            (1, "ann.o'neil@example.com"),
            (2, "ann at example.com"),
            (3, None),
            (4, "ann@example"),
            (5, "erased-5@erased.example"),
        ],
        "customer_id long, email string",
    )
    gate = quality.Gate(tmp_path / "quality", in_memory_rows=1_000)
    for engine in ("spark", "pandas"):
        (outcome,) = gate.validate(
            "emails", (rule,), ("customer_id",), batch, datetime(2026, 6, 1), engine
        ).outcomes
        assert {key["customer_id"]: key["email_problem"] for key in outcome.failing_keys} == {
            2: "An email address must have an @-sign.",
            3: "no value",
            4: "The part after the @-sign is not valid. It should have a period.",
        }, engine
