"""The change log a derived run reads: every change a merge-on-read table commits is read
once, by the first range that covers its commit, while its writer goes on committing
(delta commits, inline compaction and cleaning) in a process of its own, as Bronze does.

Run as a module, this file is that writer: `python -m tests.integration.test_change_log PATH N`
commits N times to the probe table at PATH, with the settings its environment holds.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter

from bronze.tables import SALES_TRANSACTIONS
from lakehouse import hudi, incremental, timeline
from lakehouse.incremental import Runner
from lakehouse.tables import Table
from silver.tables import UNIFIED_CUSTOMER_ORDERS
from tests.support import (
    ROOT,
    assert_equals_full_rebuild,
    cli_env,
    drain_until_equal,
    run_tables,
    run_workload,
)

PROBE = Table(
    name="change_log_probe",
    layer="bronze",
    table_type="MERGE_ON_READ",
    record_key=("id",),
    ordering=("seq",),
    change_log=True,
    buckets=2,
)
COMMITS = 24
ROWS_PER_COMMIT = 20


def _ids(seq: int) -> list[int]:
    """Half new rows, half updates of the commit before's: every file group gets log files
    on top of its base file, as Bronze's do."""
    return [seq * ROWS_PER_COMMIT + i for i in range(ROWS_PER_COMMIT // 2)] + [
        (seq - 1) * ROWS_PER_COMMIT + i for i in range(ROWS_PER_COMMIT // 2) if seq
    ]


def _commit(spark, settings, path: str, seq: int) -> None:
    frame = spark.createDataFrame(
        [(i, seq, f"v{seq}") for i in _ids(seq)], "id bigint, seq bigint, value string"
    )
    hudi.write(frame, PROBE, settings, "upsert", path=path)


def _read(spark, path: str, start: str, end: str) -> Counter:
    log = hudi.change_log(spark, path, start, end).where("op <> 'd'").select("after")
    return Counter((image["id"], image["seq"]) for image in (json.loads(r.after) for r in log.collect()))


def test_each_change_is_read_by_the_first_range_that_covers_its_commit(services, spark, tmp_path):
    path = str(tmp_path / "change_log_probe")
    _commit(spark, services, path, 0)
    start = timeline.read(spark, path, checkpoint=False).latest
    writer = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.test_change_log", path, str(COMMITS)],
        cwd=ROOT,
        env=cli_env(services),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    ranges = []
    while writer.poll() is None or timeline.read(spark, path, checkpoint=False).latest != start:
        end = timeline.read(spark, path, checkpoint=False).latest
        if end != start:
            ranges.append((start, end, _read(spark, path, start, end)))
            print(
                "RANGE",
                start,
                end,
                sum(ranges[-1][2].values()),
                hudi.change_log(spark, path, start, end).count(),
                sum(timeline.changes_committed(spark, path, start, end).values()),
            )
            start = end
    assert writer.returncode == 0, writer.stdout.read()[-3000:]
    read_once = Counter()
    for _, _, changes in ranges:
        read_once.update(changes)
    reread = {(s, e): _read(spark, path, s, e) for s, e, _ in ranges}
    differing = [
        (s, e, sorted(set(reread[(s, e)]) ^ set(c))[:5]) for s, e, c in ranges if reread[(s, e)] != c
    ]
    assert not differing, f"{len(differing)} of {len(ranges)} ranges read otherwise later: {differing}"
    expected = {(i, seq) for seq in range(1, COMMITS + 1) for i in _ids(seq)}
    assert set(read_once) == expected, sorted(expected - set(read_once))[:10]
    assert max(read_once.values()) == 1


def _missing_first_reads(monkeypatch, always: str = "") -> list[tuple]:
    """Makes the runner's change-log reads come back empty: the first read of each range, or
    every read of the input at path `always`. Returns the reads made."""
    reads = []

    def short(spark, path, start, end=None):
        reads.append((path, start, end))
        log = hudi.change_log(spark, path, start, end)
        return log.limit(0) if path == always or reads.count((path, start, end)) == 1 else log

    monkeypatch.setattr(incremental, "change_log", short)
    return reads


def test_a_change_log_read_missing_a_commit_is_read_again_or_named(services, spark, db, built, monkeypatch):
    table = UNIFIED_CUSTOMER_ORDERS
    run_workload(db, steps=6, seed=4603)
    drain_until_equal(spark, services, db)
    reads = _missing_first_reads(monkeypatch)
    report = run_tables(spark, services, [table])[table.name]
    assert report.mode == "incremental", report.line()
    assert len(reads) == 2 * len(set(reads))  # each range read again, once
    assert_equals_full_rebuild(spark, services, [table])

    # A read that stays short goes on, named in the report; a rebuild repairs what it missed.
    run_workload(db, steps=6, seed=4604)
    drain_until_equal(spark, services, db)
    _missing_first_reads(monkeypatch, always=SALES_TRANSACTIONS.path(services))
    report = run_tables(spark, services, [table])[table.name]
    assert report.mode == "incremental", report.line()
    assert re.search(
        rf"the change log of input {SALES_TRANSACTIONS.name} in \(\d+, \d+\] held, read twice, no row of "
        r"commit \d{17} \([1-9]\d* changes recorded\)",
        report.note,
    ), report.note
    monkeypatch.undo()
    assert Runner(spark, services).run(table, full_refresh=True).mode == "full"
    assert_equals_full_rebuild(spark, services, [table])


if __name__ == "__main__":
    from lakehouse.settings import load
    from lakehouse.spark import session

    settings = load()
    writing = session(settings, "change-log-probe-writer")
    for seq in range(1, int(sys.argv[2]) + 1):
        _commit(writing, settings, sys.argv[1], seq)
