"""The continuous pipeline's choice of the next run (medallion/freshness.py)."""

from __future__ import annotations

from bronze.tables import BRONZE_TABLES, INVENTORY_UPDATES, WEB_CLICKSTREAMS
from gold.tables import CUSTOMER_SEGMENTATION_FEATURES, CUSTOMER_SEGMENTS, DAILY_SALES
from medallion.freshness import (
    Standing,
    bronze_triggers,
    downstream,
    next_runs,
    pressing,
    seconds_until_due,
    tightest,
)
from medallion.tables import derived_tables
from silver.tables import (
    CUSTOMER_PROFILES,
    PRODUCT_DAILY_INVENTORY,
    SESSIONIZED_CLICKSTREAMS,
    UNIFIED_CUSTOMER_ORDERS,
)

TABLES = derived_tables()


def standings(**behind: tuple[float, bool]) -> dict[str, Standing]:
    """Every table current, but those named: (seconds behind the source, changes waiting)."""
    found = {t.name: Standing(behind=0.0, waiting=False) for t in TABLES}
    for name, (seconds, waiting) in behind.items():
        found[name] = Standing(seconds, waiting)
    return found


def names(runs) -> list[str]:
    return [t.name for t in runs]


def ten_seconds(_: str) -> float:
    return 10.0


def test_nothing_runs_while_every_table_has_time_left_or_nothing_to_take():
    assert next_runs(TABLES, standings(), ten_seconds) == []
    # Ten minutes behind, but no change waits for it nor for anything it reads.
    assert next_runs(TABLES, standings(**{CUSTOMER_SEGMENTS.name: (600.0, False)}), ten_seconds) == []
    # Changes wait, and 5 minutes are left of 10: it becomes due with 30 s of its chain
    # (unified orders, profiles, segments) and 30 s of the longest chain left.
    calm = standings(**{CUSTOMER_SEGMENTS.name: (300.0, True)})
    assert next_runs(TABLES, calm, ten_seconds) == []


def test_the_most_overdue_table_runs_first_after_the_tables_it_reads():
    # Daily sales is 25 s behind its 30 s target; the features 20 minutes behind their 15.
    # By share of target, daily sales is 0.83 in, the features 1.33: the features run first,
    # after what they read that unified orders' waiting changes would reach.
    found = standings(
        **{
            UNIFIED_CUSTOMER_ORDERS.name: (25.0, True),
            DAILY_SALES.name: (25.0, False),
            CUSTOMER_SEGMENTATION_FEATURES.name: (1200.0, True),
        }
    )
    assert names(next_runs(TABLES, found, ten_seconds)) == [
        UNIFIED_CUSTOMER_ORDERS.name,
        CUSTOMER_PROFILES.name,
        CUSTOMER_SEGMENTATION_FEATURES.name,
    ]
    # Once the features ran, daily sales comes next, its input first although nothing
    # waits for daily sales itself yet.
    found[CUSTOMER_SEGMENTATION_FEATURES.name] = Standing(0.0, False)
    assert names(next_runs(TABLES, found, ten_seconds)) == [UNIFIED_CUSTOMER_ORDERS.name, DAILY_SALES.name]


def test_a_held_table_is_neither_run_nor_waited_for():
    found = standings(
        **{
            CUSTOMER_PROFILES.name: (400.0, True),
            CUSTOMER_SEGMENTS.name: (900.0, True),
        }
    )
    assert names(next_runs(TABLES, found, ten_seconds)) == [CUSTOMER_PROFILES.name, CUSTOMER_SEGMENTS.name]
    held = {CUSTOMER_PROFILES.name}
    assert names(next_runs(TABLES, found, ten_seconds, held)) == [CUSTOMER_SEGMENTS.name]
    # Unknown standing (Kafka down and no per-hop lag either): nothing to go by.
    found[CUSTOMER_SEGMENTS.name] = Standing(None, True)
    assert names(next_runs(TABLES, found, ten_seconds, held)) == []


def test_the_slot_kept_for_the_tightest_target_plans_only_the_chain_to_it():
    assert tightest(TABLES) == {DAILY_SALES.name}
    # The features are further past their target, but the kept slot may only take daily
    # sales' chain: unified orders, then daily sales.
    found = standings(
        **{
            UNIFIED_CUSTOMER_ORDERS.name: (28.0, True),
            DAILY_SALES.name: (28.0, False),
            CUSTOMER_SEGMENTATION_FEATURES.name: (1200.0, True),
        }
    )
    assert names(next_runs(TABLES, found, ten_seconds, only=tightest(TABLES))) == [
        UNIFIED_CUSTOMER_ORDERS.name,
        DAILY_SALES.name,
    ]


def test_while_daily_sales_is_past_its_target_only_tables_as_far_past_theirs_start_beside_it():
    # Daily sales is twice its 30 s target behind, its chain running (so both are busy);
    # sessions are 1.5 times their 5 minutes behind: they wait, the cores go to daily sales.
    found = standings(
        **{
            UNIFIED_CUSTOMER_ORDERS.name: (60.0, True),
            DAILY_SALES.name: (60.0, True),
            SESSIONIZED_CLICKSTREAMS.name: (450.0, True),
        }
    )
    busy = {UNIFIED_CUSTOMER_ORDERS.name, DAILY_SALES.name}
    assert pressing(TABLES, found) == 2.0
    assert next_runs(TABLES, found, ten_seconds, busy, at_least=2.0) == []
    # Further into their target than daily sales is into its own, they start.
    found[SESSIONIZED_CLICKSTREAMS.name] = Standing(700.0, True)
    assert names(next_runs(TABLES, found, ten_seconds, busy, at_least=2.0)) == [SESSIONIZED_CLICKSTREAMS.name]
    # A quality gate blocking unified orders would hold everything else until the rows are
    # fixed at the source: nothing presses then.
    assert pressing(TABLES, found, blocked={UNIFIED_CUSTOMER_ORDERS.name}) == 0.0
    # Within its target, daily sales holds nothing back.
    found[DAILY_SALES.name] = Standing(25.0, True)
    assert pressing(TABLES, found) == 0.0


def test_the_loop_sleeps_until_the_tightest_target_could_come_due():
    # Daily sales: 30 s target, less its margin of 3 s, 10 s of its own run and 10 s of
    # unified orders', less the longest chain that may run in front of them: the three runs
    # of demand forecasting or of the segmentation features (each with its inputs), 30 s.
    assert seconds_until_due(TABLES, standings(), ten_seconds) == -23.0
    assert seconds_until_due(TABLES, standings(), lambda _: 2.0) == 17.0


def test_a_table_comes_due_with_room_for_the_longest_chain_in_front_of_it():
    # Sessions (5 min target) take 2 s and nothing upstream; the features' chain, 15 s, may
    # have just started. Due with 2 + 15 s left, not with twice its own 2 s, and a tenth of
    # its target (30 s) besides.
    def expected(name: str) -> float:
        return 2.0 if name == SESSIONIZED_CLICKSTREAMS.name else 5.0

    def runs(behind: float) -> list[str]:
        sessions_behind = standings(**{SESSIONIZED_CLICKSTREAMS.name: (behind, True)})
        return names(next_runs(TABLES, sessions_behind, expected))

    assert runs(252.0) == []
    assert runs(253.0) == [SESSIONIZED_CLICKSTREAMS.name]


def test_bronze_commits_a_topic_less_often_when_every_table_downstream_accepts_minutes():
    # Sales, customers and products reach daily sales, the tightest target (30 s): they
    # commit on the trigger given. Clickstreams and inventory reach tables of 5 minutes and
    # more: every fifth of 5 minutes, or the trigger given when that is longer.
    slower = {INVENTORY_UPDATES.name: 60, WEB_CLICKSTREAMS.name: 60}
    for shortest in (3, 10):
        expected = {t.name: slower.get(t.name, shortest) for t in BRONZE_TABLES}
        assert bronze_triggers(TABLES, shortest) == expected
    assert set(bronze_triggers(TABLES, 90).values()) == {90}


def test_downstream_of_a_table_is_every_table_that_reads_it_directly_or_further_down():
    assert downstream(TABLES, {CUSTOMER_PROFILES.name}) == {
        CUSTOMER_PROFILES.name,
        CUSTOMER_SEGMENTS.name,
        CUSTOMER_SEGMENTATION_FEATURES.name,
    }
    # Everything reads unified orders but the two tables built from events alone.
    assert downstream(TABLES, {UNIFIED_CUSTOMER_ORDERS.name}) == {t.name for t in TABLES} - {
        SESSIONIZED_CLICKSTREAMS.name,
        PRODUCT_DAILY_INVENTORY.name,
    }
    assert downstream(TABLES, set()) == set()
