"""When an incremental reader's checkpoint is still readable, and what a run does about it."""

from __future__ import annotations

from lakehouse.incremental import _rebuild_reason
from lakehouse.timeline import Timeline

# (requested, completed): the second commit finished after the third began.
COMMITS = (("100", "105"), ("110", "130"), ("120", "125"), ("140", "145"))


def test_commits_after_a_checkpoint_are_found_by_completion_time():
    timeline = Timeline(COMMITS, earliest_retained=None, last_consumed=None)
    assert timeline.latest == "145"
    assert timeline.has_commits_after("125") and not timeline.has_commits_after("145")
    assert timeline.can_read_after("105")


def test_a_checkpoint_before_the_active_timeline_or_the_cleaner_is_not_readable():
    assert not Timeline(COMMITS, None, None).can_read_after("090"), "archived commits"
    cleaned = Timeline(COMMITS, earliest_retained="120", last_consumed=None)
    assert not cleaned.can_read_after("105"), "the commit requested at 110 may have been cleaned"
    assert cleaned.can_read_after("130")


def test_a_run_says_why_it_rebuilds():
    inputs = {"bronze_t": Timeline(COMMITS, earliest_retained="120", last_consumed=None)}
    assert _rebuild_reason(inputs, None) == "first run"
    assert _rebuild_reason(inputs, {}) == "no checkpoint for input bronze_t"
    assert "checkpoint 105 of input bronze_t is no longer on its active timeline" in _rebuild_reason(
        inputs, {"bronze_t": "105"}
    )
    assert _rebuild_reason(inputs, {"bronze_t": "130"}) is None


def test_a_checkpoint_on_a_commit_a_restore_undid_rebuilds():
    # The input was restored to its commit completed at 125; the reader had read up to 145,
    # and the input has committed again since.
    restored = Timeline((("100", "105"), ("120", "125"), ("150", "155")), None, None)
    assert "input bronze_t was restored to a savepoint before commit 145" in _rebuild_reason(
        {"bronze_t": restored}, {"bronze_t": "145"}
    )
    assert _rebuild_reason({"bronze_t": restored}, {"bronze_t": "125"}) is None


def test_the_readable_changes_start_after_the_last_commit_before_the_oldest_retained_one():
    assert Timeline(COMMITS, None, None).readable_since == "earliest"
    # The commit requested at 110 may have been cleaned: the range starts after it.
    assert Timeline(COMMITS, earliest_retained="120", last_consumed=None).readable_since == "130"
    assert Timeline(COMMITS, earliest_retained="100", last_consumed=None).readable_since == "earliest"
