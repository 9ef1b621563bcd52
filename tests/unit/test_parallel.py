"""Tables run side by side: each after the tables it reads, never more at once than asked,
and nothing new after a failure."""

from __future__ import annotations

import threading

import pytest

from lakehouse.incremental import InputNotReady
from lakehouse.reports import RunReport
from lakehouse.rules import QualityGateFailed
from medallion import parallel
from medallion.tables import derived_tables
from silver.tables import SESSIONIZED_CLICKSTREAMS, UNIFIED_CUSTOMER_ORDERS


class Runs:
    """The runner's side without Spark: records when each table's run starts and ends, how
    many run at once, and fails or waits where told."""

    def __init__(self, outcomes=None):
        self.outcomes, self.events, self.most_at_once = outcomes or {}, [], 0
        self._running, self._lock = 0, threading.Lock()

    def alongside(self):
        return self

    def run(self, table, full_refresh):
        with self._lock:
            self.events.append(("start", table.name))
            self._running += 1
            self.most_at_once = max(self.most_at_once, self._running)
        try:
            if outcome := self.outcomes.get(table.name):
                raise outcome
            return RunReport(table.name, "full" if full_refresh else "incremental")
        finally:
            with self._lock:
                self._running -= 1
                self.events.append(("end", table.name))


def test_each_table_starts_after_the_tables_it_reads_have_ended():
    runs = Runs()
    reports = parallel.run_tables(runs, derived_tables(), False, at_once=2)

    assert sorted(reports) == sorted(t.name for t in derived_tables())
    assert runs.most_at_once <= 2
    for table in derived_tables():
        started = runs.events.index(("start", table.name))
        for source in table.inputs:
            if ("end", source.table.name) in runs.events:
                assert runs.events.index(("end", source.table.name)) < started, table.name


def test_after_a_failure_no_table_starts_and_the_failure_is_raised():
    blocked = QualityGateFailed("hudi_unified_customer_orders_silver: rule failed")
    runs = Runs({UNIFIED_CUSTOMER_ORDERS.name: blocked})

    with pytest.raises(QualityGateFailed) as raised:
        parallel.run_tables(runs, derived_tables(), False, at_once=1)

    assert raised.value is blocked
    assert runs.events == [("start", UNIFIED_CUSTOMER_ORDERS.name), ("end", UNIFIED_CUSTOMER_ORDERS.name)]


def test_a_waiting_table_goes_to_done_and_its_readers_still_run():
    waiting = InputNotReady("no events yet")
    runs, seen = Runs({SESSIONIZED_CLICKSTREAMS.name: waiting}), {}
    reports = parallel.run_tables(
        runs, derived_tables(), False, 2, lambda table, outcome: seen.update({table.name: outcome})
    )

    assert seen[SESSIONIZED_CLICKSTREAMS.name] is waiting
    assert SESSIONIZED_CLICKSTREAMS.name not in reports
    assert len(reports) == len(derived_tables()) - 1


def test_without_done_a_waiting_table_fails_the_call():
    runs = Runs({SESSIONIZED_CLICKSTREAMS.name: InputNotReady("no events yet")})
    with pytest.raises(InputNotReady):
        parallel.run_tables(runs, derived_tables(), False, at_once=2)
