"""A pass over a layer: what each table's outcome does to the rest of the pass."""

from __future__ import annotations

import dataclasses
import json

from lakehouse.incremental import InputNotReady
from lakehouse.reports import RunReport
from pipeline import passes
from silver.tables import SESSIONIZED_CLICKSTREAMS

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
