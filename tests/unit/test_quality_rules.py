"""Quality rule declarations: what is derived from a table's declaration, and the
mistakes a declaration can make, each refused with a message that says what to fix."""

from __future__ import annotations

import dataclasses

import pytest

from lakehouse import quality
from lakehouse.catalog import derived_tables
from silver.tables import CUSTOMER_PROFILES, UNIFIED_CUSTOMER_ORDERS


def test_every_table_checks_its_key_first():
    for table in derived_tables():
        names = [r.name for r in table.rules]
        expected = [f"{c} is not null" for c in table.record_key] + [
            f"{', '.join(table.record_key)} unique"]
        assert names[:len(expected)] == expected
        assert all(r.tier == quality.FAIL for r in table.rules[:len(expected)])


def test_referential_rules_wait_for_the_input_that_brings_the_missing_row():
    waiting = {r.name: r.waits_for for r in UNIFIED_CUSTOMER_ORDERS.rules if r.waits_for}
    assert waiting == {"customer exists": "customers", "product exists": "products"}


def test_a_batch_rule_cannot_quarantine():
    with pytest.raises(ValueError, match="checks the batch as a whole, it has no rows to quarantine"):
        quality.row_count(minimum=1, tier=quality.QUARANTINE)


def test_an_unknown_tier_is_refused():
    with pytest.raises(ValueError, match="tier must be one of"):
        quality.between("quantity", 1, tier="drop")


def test_a_pattern_must_match_the_whole_value():
    with pytest.raises(ValueError, match=r"anchor the pattern with \^\.\.\.\$"):
        quality.matches("email", "@")


def test_a_rule_waits_only_for_an_input_of_its_table():
    with pytest.raises(ValueError, match=r"rules wait for \['suppliers'\], which must be input aliases"):
        dataclasses.replace(CUSTOMER_PROFILES, expectations=(
            quality.exists("supplier", "supplier_name", waits_for="suppliers"),))


def test_rule_names_are_distinct_within_a_table():
    with pytest.raises(ValueError, match="rule names .* must be distinct"):
        dataclasses.replace(CUSTOMER_PROFILES, expectations=(
            quality.between("lifetime_value", 0), quality.between("lifetime_value", 0)))


def test_freshness_and_future_rules_take_the_clock_at_validation():
    from datetime import datetime, timedelta
    rules = (quality.not_in_future("ts"), quality.fresh("ts", within=timedelta(hours=2)))
    now = datetime(2026, 6, 1, 12, 0)
    assert quality.expectation_parameters(rules, now) == {
        "now": now, "fresh_since_7200": datetime(2026, 6, 1, 10, 0)}
    assert rules[1].name == "newest ts at most 2 hours old"
    assert [r.depends_on_clock for r in rules + (quality.between("ts", 0),)] == [True, True, False]


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
