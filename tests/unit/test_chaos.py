"""The fault matrix's own logic: its schedule and its patience with a killed writer's commit."""

import time

import pytest

from bronze.job import BronzeError
from operations import chaos


def test_a_write_blocked_by_a_killed_writers_heartbeat_is_tried_again(monkeypatch):
    monkeypatch.setattr(chaos.time, "sleep", lambda seconds: None)
    attempts, reported = [], []

    def drain():
        attempts.append(1)
        if len(attempts) < 3:
            raise BronzeError("Bronze table t failed: Cannot execute instant 1 due to heartbeat")
        return "drained"

    assert chaos._retrying(drain, time.monotonic() + 60, reported.append) == "drained"
    assert len(attempts) == 3 and len(reported) == 2


def test_past_the_deadline_the_failure_is_raised():
    def drain():
        raise BronzeError("Bronze table t failed: still blocked")

    with pytest.raises(BronzeError, match="still blocked"):
        chaos._retrying(drain, time.monotonic() - 1, print)


def test_every_victim_is_killed_as_often_as_planned_in_a_seeded_order():
    import random
    from collections import Counter

    plan = chaos.ChaosPlan(kills_per_victim=3)
    first = chaos.kill_schedule(plan, random.Random(7))
    assert Counter(first) == {victim: 3 for victim in chaos.VICTIMS}
    assert chaos.kill_schedule(plan, random.Random(7)) == first
    assert first != sorted(first)
