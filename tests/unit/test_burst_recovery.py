"""When the freshness benchmark counts a table back within its target after a burst."""

from __future__ import annotations

from benchmarks.freshness import recovered_after

TARGETS = {"daily_sales": 30.0, "profiles": 300.0}


def _samples(daily_sales: list[float | None], profiles: list[float | None]) -> list:
    lags = zip(daily_sales, profiles, strict=True)
    return [(at * 10.0, {"daily_sales": d, "profiles": p}) for at, (d, p) in enumerate(lags)]


def test_a_table_is_back_at_its_last_sample_over_target_until_a_while_after_it_reflected_the_burst():
    samples = _samples(
        daily_sales=[5, 25, 45, 65, 20, 10, 31, 12, 14, 32, 15],
        profiles=[None, None, 110, 120, 130, 140, 150, 160, 170, 180, 190],
    )
    recovered = recovered_after(samples, {"daily_sales": 40.0, "profiles": 100.0}, TARGETS, settle=20)

    # daily sales reflected the burst at 40 s; its blip at 60 s is within the settle and
    # counts, the one at 90 s is the steady state's; profiles was not built until 20 s.
    assert recovered == {"daily_sales": 60.0, "profiles": 10.0}


def test_a_table_never_over_its_target_was_back_at_once():
    samples = _samples(daily_sales=[5, 10, 15], profiles=[50, 60, 70])

    assert recovered_after(samples, {"daily_sales": 10.0, "profiles": 20.0}, TARGETS, settle=60) == {
        "daily_sales": 0.0,
        "profiles": 0.0,
    }
