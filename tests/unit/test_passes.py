"""A pass over a layer: what each table's outcome does to the rest of the pass; the
continuous loop's slots."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections import Counter
from types import SimpleNamespace

from gold.tables import DAILY_SALES
from lakehouse.incremental import InputNotReady
from lakehouse.reports import RunReport
from lakehouse.spark import URGENT_POOL
from medallion.tables import declared_tables
from pipeline import passes
from silver.tables import (
    CUSTOMER_PROFILES,
    PRODUCT_DAILY_INVENTORY,
    SESSIONIZED_CLICKSTREAMS,
    UNIFIED_CUSTOMER_ORDERS,
)

NO_EVENTS = InputNotReady(
    "hudi_sessionized_clickstreams_silver: input bronze.hudi_web_clickstreams_bronze has no data yet"
)


class Outcomes:
    """The runner's side of a pass without Spark: each table's run is idle, but the one
    whose input no source has written to yet."""

    def __init__(self):
        self.ran, self.recorded = [], False

    def alongside(self):
        return self

    def run(self, table, full_refresh):
        if table is SESSIONIZED_CLICKSTREAMS:
            raise NO_EVENTS
        self.ran.append(table.name)
        return RunReport(table.name, "idle")

    def record_results(self):
        self.recorded = True


def test_a_table_whose_input_has_no_data_yet_waits_and_the_others_run(settings, tmp_path, capsys):
    outcomes = Outcomes()
    passes.derived(dataclasses.replace(settings, state_dir=tmp_path), "silver", runner=outcomes)

    lines = capsys.readouterr().out.splitlines()
    assert f"{SESSIONIZED_CLICKSTREAMS.name:<40} waiting: {NO_EVENTS}" in lines
    others = [t.name for t in passes.layer_tables("silver", None) if t is not SESSIONIZED_CLICKSTREAMS]
    assert sorted(outcomes.ran) == sorted(others) and outcomes.recorded


def test_a_waiting_table_is_a_report_in_json(settings, tmp_path, capsys):
    passes.derived(
        dataclasses.replace(settings, state_dir=tmp_path), "silver", as_json=True, runner=Outcomes()
    )

    reports = {r["table"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert reports[SESSIONIZED_CLICKSTREAMS.name] == {
        "table": SESSIONIZED_CLICKSTREAMS.name,
        "mode": "waiting",
        "note": str(NO_EVENTS),
    }


class Warehouse:
    """The tables' standings and the runner's side of the continuous loop without Spark:
    the tables named are behind the source with changes waiting; a run takes a moment (or
    the seconds given), brings its table up to date and commits it."""

    def __init__(self, behind: dict[str, float], seconds: dict[str, float] | None = None):
        self.behind, self.commits, self.events = dict(behind), Counter(), []
        self.seconds = seconds or {}
        self.pools = {}  # table -> the scheduler pool its run's thread was in
        self._lock = threading.Lock()
        self._pool = threading.local()

    def states(self, settings, storage):
        with self._lock:
            return [
                SimpleNamespace(
                    name=t.name,
                    last_commit=self.commits[t.name],
                    source_known=True,
                    source_lag=lambda now, behind=self.behind.get(t.name, 0.0): behind,
                    oldest_waiting="a change" if t.name in self.behind else None,
                )
                for t in declared_tables()
            ]

    def alongside(self):
        return self

    def schedule_in(self, pool):
        self._pool.name = pool

    def run(self, table, full_refresh=False):
        self.pools[table.name] = self._pool.name
        self.events.append(("start", table.name))
        time.sleep(self.seconds.get(table.name, 0.5))
        with self._lock:
            self.behind.pop(table.name, None)
            self.commits[table.name] += 1
        self.events.append(("end", table.name))
        return RunReport(table.name, "incremental")

    def record_results(self):
        pass

    def poll(self):
        """The Bronze process: it stops once every table has run."""
        return 0 if not self.behind else None


def test_the_continuous_loop_runs_overdue_chains_side_by_side_never_beside_their_inputs(
    settings, monkeypatch, capsys
):
    # Clickstreams 4x their target, profiles 3x (their chain starts with unified orders):
    # each takes a slot, the first its own.
    warehouse = Warehouse(
        {
            SESSIONIZED_CLICKSTREAMS.name: 1200.0,
            CUSTOMER_PROFILES.name: 900.0,
            UNIFIED_CUSTOMER_ORDERS.name: 100.0,
        }
    )
    monkeypatch.setattr(passes, "table_states", warehouse.states)
    monkeypatch.setattr(passes, "_expected_seconds", lambda settings: lambda name: 1.0)

    passes._keep_fresh(settings, warehouse, 1, warehouse)

    # Both chains start before either ends.
    assert set(warehouse.events[:2]) == {
        ("start", SESSIONIZED_CLICKSTREAMS.name),
        ("start", UNIFIED_CUSTOMER_ORDERS.name),
    }
    starts = [name for event, name in warehouse.events if event == "start"]
    assert sorted(starts) == sorted(
        [SESSIONIZED_CLICKSTREAMS.name, UNIFIED_CUSTOMER_ORDERS.name, CUSTOMER_PROFILES.name]
    )
    events = warehouse.events
    # Profiles read unified orders: they start once its run has ended.
    assert events.index(("start", CUSTOMER_PROFILES.name)) > events.index(
        ("end", UNIFIED_CUSTOMER_ORDERS.name)
    )
    assert (
        f"{CUSTOMER_PROFILES.name:<40} 900 s behind the source, over its 300 s target by 600 s"
        in capsys.readouterr().out
    )


def test_a_table_whose_input_has_run_starts_while_that_chain_goes_on(settings, monkeypatch):
    # Profiles are the most overdue: their chain (unified orders, then profiles) takes a
    # slot; daily sales read unified orders, so they wait for its run, not for the profiles'.
    warehouse = Warehouse(
        {CUSTOMER_PROFILES.name: 900.0, DAILY_SALES.name: 40.0, UNIFIED_CUSTOMER_ORDERS.name: 40.0},
        seconds={CUSTOMER_PROFILES.name: 3.0},
    )
    monkeypatch.setattr(passes, "table_states", warehouse.states)
    monkeypatch.setattr(passes, "_expected_seconds", lambda settings: lambda name: 1.0)

    passes._keep_fresh(settings, warehouse, 1, warehouse)

    events = warehouse.events
    assert events[:2] == [("start", UNIFIED_CUSTOMER_ORDERS.name), ("end", UNIFIED_CUSTOMER_ORDERS.name)]
    started = events.index(("start", DAILY_SALES.name))
    assert (
        events.index(("start", CUSTOMER_PROFILES.name))
        < started
        < events.index(("end", CUSTOMER_PROFILES.name))
    )


def test_the_chain_to_daily_sales_runs_in_a_slot_of_its_own_while_the_others_are_taken(settings, monkeypatch):
    # Sessions and daily inventory, far past their targets, take both slots with long runs;
    # daily sales, due but less overdue than either, starts in the slot kept for it (after
    # unified orders), in the urgent pool, and is done before either ends.
    warehouse = Warehouse(
        {
            SESSIONIZED_CLICKSTREAMS.name: 1200.0,
            PRODUCT_DAILY_INVENTORY.name: 1100.0,
            UNIFIED_CUSTOMER_ORDERS.name: 28.0,
            DAILY_SALES.name: 28.0,
        },
        seconds={SESSIONIZED_CLICKSTREAMS.name: 3.0, PRODUCT_DAILY_INVENTORY.name: 3.0},
    )
    monkeypatch.setattr(passes, "table_states", warehouse.states)
    monkeypatch.setattr(passes, "_expected_seconds", lambda settings: lambda name: 1.0)

    passes._keep_fresh(settings, warehouse, 1, warehouse)

    events = warehouse.events
    assert set(events[:3]) == {
        ("start", SESSIONIZED_CLICKSTREAMS.name),
        ("start", PRODUCT_DAILY_INVENTORY.name),
        ("start", UNIFIED_CUSTOMER_ORDERS.name),
    }
    assert events.index(("end", DAILY_SALES.name)) < events.index(("end", SESSIONIZED_CLICKSTREAMS.name))
    assert warehouse.pools == {
        SESSIONIZED_CLICKSTREAMS.name: None,
        PRODUCT_DAILY_INVENTORY.name: None,
        UNIFIED_CUSTOMER_ORDERS.name: URGENT_POOL,
        DAILY_SALES.name: URGENT_POOL,
    }
