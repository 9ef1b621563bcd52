"""The fault matrix, short: each moving part killed -9 once under a live workload, and
every table still holds exactly what its source holds (`make chaos` kills each six times)."""

from __future__ import annotations

import pytest

from operations import chaos
from operations.chaos import VICTIMS, ChaosPlan

# Five minutes of kills, then every table checked: longer than pyproject.toml's timeout.
pytestmark = [pytest.mark.long, pytest.mark.timeout(1500)]


def test_killing_every_service_and_job_loses_and_duplicates_nothing(services, spark):
    plan = ChaosPlan(kills_per_victim=1, seed=14, between_kills=(5.0, 15.0), down_for=(0.0, 5.0))
    report = chaos.run(spark, services, plan)
    print("\n".join(report.lines()))
    assert report.kills == {victim: 1 for victim in VICTIMS}
    assert report.passed, "\n".join(report.lines())
