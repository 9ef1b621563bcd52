"""Which path a run takes: incremental, unless the changes waiting would cost more than a
rebuild did (lakehouse/costs.py)."""

from __future__ import annotations

import dataclasses

from lakehouse import costs
from lakehouse.costs import FULL, INCREMENTAL, Choice, Measured, PathCosts
from lakehouse.reports import RunReport

MEASURED = PathCosts(incremental=Measured(seconds=4.0, changes=100), full=Measured(seconds=10.0, changes=0))


def test_a_run_goes_incrementally_until_both_paths_were_measured():
    assert PathCosts().choose(1_000_000) == Choice(INCREMENTAL)
    assert PathCosts(full=MEASURED.full).choose(1_000_000) == Choice(INCREMENTAL)
    assert PathCosts(incremental=MEASURED.incremental).choose(1_000_000) == Choice(INCREMENTAL)


def test_the_estimate_scales_with_the_changes_waiting_both_ways():
    assert MEASURED.estimate(250) == 10.0
    assert MEASURED.choose(250) == Choice(INCREMENTAL)  # 10 s estimated, a rebuild took 10 s
    # Optimistic for a small run (most of one is fixed cost), which the run then measures.
    assert MEASURED.estimate(25) == 1.0


def test_one_slow_incremental_run_does_not_keep_a_table_rebuilding():
    # A backlog read while the machine was busy: had a small run been estimated at those
    # 48 s, every run would rebuild and the incremental path would never be measured again.
    busy = PathCosts(incremental=Measured(seconds=48.0, changes=180), full=Measured(seconds=26.0, changes=0))
    assert busy.choose(500).path == FULL
    assert busy.choose(50) == Choice(INCREMENTAL)


def test_a_backlog_that_would_cost_more_than_a_rebuild_rebuilds_and_says_why():
    assert MEASURED.choose(251) == Choice(
        FULL,
        "rebuilt: 251 changes would take about 10 s incrementally (100 took 4.0 s), a rebuild took 10.0 s",
    )


def test_a_rebuild_measured_slow_is_measured_again_once_the_incremental_runs_cost_twice_it():
    # A first build in a cold JVM beside Bronze's backlog took 73 s; a warm rebuild takes 6.
    first_build = PathCosts(
        incremental=Measured(seconds=16.0, changes=300), full=Measured(seconds=73.4, changes=0)
    )
    assert first_build.choose(300) == Choice(INCREMENTAL)
    assert dataclasses.replace(first_build, since_rebuild=146.0).choose(300) == Choice(INCREMENTAL)
    assert dataclasses.replace(first_build, since_rebuild=146.8).choose(300) == Choice(
        FULL,
        "rebuilt to measure it again: the incremental runs since the last rebuild took 147 s, it took 73.4 s",
    )


def test_an_incremental_path_measured_small_is_measured_again_once_the_rebuilds_cost_twice_its_estimate():
    # Ten changes, mostly fixed cost, put a hundred at 91 s against a 10 s rebuild: every run
    # rebuilt, and the rebuilds grew with the table.
    small = PathCosts(incremental=Measured(seconds=9.1, changes=10), full=Measured(seconds=10.0, changes=0))
    assert small.choose(100).path == FULL
    assert dataclasses.replace(small, since_incremental=181.0).choose(100).path == FULL
    assert dataclasses.replace(small, since_incremental=182.0).choose(100) == Choice(
        INCREMENTAL,
        "incremental to measure it again: the rebuilds since the last incremental run took 182 s, "
        "100 changes were estimated at 91 s",
    )
    # A backlog's estimate stays out of reach of the same rebuilds.
    assert dataclasses.replace(small, since_incremental=182.0).choose(25_000).path == FULL


def test_an_incremental_path_measured_at_about_the_changes_waiting_is_not_measured_again():
    # 96 changes took 10.3 s, rebuilds 4-11 s: another incremental run of about as many
    # changes would only measure the same again, at twice a rebuild's cost.
    measured = PathCosts(
        incremental=Measured(seconds=10.3, changes=96),
        full=Measured(seconds=5.0, changes=0),
        since_incremental=1_000.0,
    )
    assert measured.choose(192).path == FULL
    assert measured.choose(193).path == INCREMENTAL


def test_two_runs_of_changes_twofold_apart_split_a_runs_fixed_cost_from_its_cost_per_change():
    # Unified orders at the demo's size: scaled alone, 83 changes in 11.1 s put 4 at 0.5 s,
    # and every run of a few changes went incrementally at twice a rebuild's 5 s.
    measured = PathCosts(
        incremental=Measured(seconds=11.1, changes=83),
        full=Measured(seconds=5.0, changes=0),
        other_scale=Measured(seconds=9.5, changes=10),
    )
    assert round(measured.estimate(4), 2) == 9.37
    assert round(measured.estimate(100), 2) == 11.47
    assert measured.choose(4) == Choice(
        FULL,
        "rebuilt: 4 changes would take about 9 s incrementally (83 took 11.1 s, 10 took 9.5 s), "
        "a rebuild took 5.0 s",
    )
    # Within twice the most changes measured, the line is a measurement: it is not measured
    # again however long the rebuilds run; beyond, it is a guess.
    rebuilt_long = dataclasses.replace(measured, since_incremental=1_000.0)
    assert rebuilt_long.choose(166).path == FULL
    assert rebuilt_long.choose(167).path == INCREMENTAL


def test_two_runs_that_disagree_leave_the_newest_to_be_scaled_alone():
    # The run over more changes was the cheaper: noise on a busy machine, not a line.
    noisy = PathCosts(
        incremental=Measured(seconds=9.7, changes=87),
        full=Measured(seconds=5.0, changes=0),
        other_scale=Measured(seconds=10.3, changes=10),
    )
    assert noisy.estimate(87 * 2) == 9.7 * 2
    assert noisy.choose(7) == Choice(INCREMENTAL)


def test_each_run_records_the_cost_of_the_path_it_took(settings, tmp_path):
    settings = dataclasses.replace(settings, state_dir=tmp_path)
    table = "hudi_daily_sales_gold"
    assert costs.read(settings, table) == PathCosts()
    costs.record(settings, RunReport(table, "full", seconds=10.0))
    costs.record(settings, RunReport(table, "incremental", changes_read=100, seconds=4.0))
    costs.record(settings, RunReport(table, "idle", seconds=0.5))
    assert costs.read(settings, table) == dataclasses.replace(
        MEASURED, last="incremental", since_rebuild=4.0, since_incremental=0.0
    )
    costs.record(settings, RunReport(table, "incremental", changes_read=7, seconds=3.0))
    assert costs.read(settings, table).incremental == Measured(seconds=3.0, changes=7)
    # Commits that changed nothing: fixed cost only, no measure of a change's.
    costs.record(settings, RunReport(table, "full", seconds=9.0))
    costs.record(settings, RunReport(table, "incremental", changes_read=0, seconds=2.0))
    assert costs.read(settings, table) == PathCosts(
        Measured(seconds=3.0, changes=7),
        Measured(seconds=9.0, changes=0),
        other_scale=Measured(seconds=2.0, changes=0),  # the fixed cost, 100 changes' run before it
        last="incremental",
        since_rebuild=2.0,
        since_incremental=9.0,  # the fixed-cost run measured no change, so the clock runs on
    )
    # A run of about the newest's changes leaves the newest alone to go by.
    costs.record(settings, RunReport(table, "incremental", changes_read=10, seconds=3.2))
    assert costs.read(settings, table).other_scale is None
    assert costs.read(settings, "hudi_customer_segments_gold") == PathCosts()
    elsewhere = dataclasses.replace(settings, warehouse=str(tmp_path / "bench" / "warehouse"))
    assert costs.read(elsewhere, table) == PathCosts()
