"""One quality gate serves every run of a process, although other processes declare the same
suites in the same GX project meanwhile."""

from __future__ import annotations

from datetime import datetime

from lakehouse import quality, rules

NOW = datetime(2026, 6, 1)


def _channel_failures(gate: quality.Gate, batch, declared) -> int:
    (outcome,) = gate.validate("channels", declared, ("id",), batch, NOW, "pandas").outcomes
    return outcome.unexpected_count


def test_a_suite_another_process_declared_meanwhile_is_declared_again(spark, tmp_path):
    """Two gates on one project stand for two processes (a continuous pass and a scheduled
    asset): each one's save makes the other's copy of the suite stale in GX's eyes."""
    declared = (rules.in_set("channel", ("store", "web")),)
    batch = spark.createDataFrame([(1, "web"), (2, "fax")], "id long, channel string")
    this, other = (quality.Gate(tmp_path / "quality", in_memory_rows=1_000) for _ in range(2))
    assert _channel_failures(this, batch, declared) == 1
    assert _channel_failures(other, batch, declared) == 1
    assert _channel_failures(this, batch, declared) == 1


def test_a_table_declared_anew_is_checked_by_its_new_rules(spark, tmp_path):
    batch = spark.createDataFrame([(1, "web"), (2, "fax")], "id long, channel string")
    gate = quality.Gate.shared(tmp_path / "quality", 1_000)
    assert _channel_failures(gate, batch, (rules.in_set("channel", ("store", "web")),)) == 1
    assert quality.Gate.shared(tmp_path / "quality", 1_000) is gate
    assert _channel_failures(gate, batch, (rules.in_set("channel", ("web", "fax")),)) == 0


def test_data_docs_are_built_once_for_the_validations_since_the_last_build(spark, tmp_path):
    batch = spark.createDataFrame([(1, "web"), (2, "fax")], "id long, channel string")
    gate = quality.Gate(tmp_path / "quality", in_memory_rows=1_000)
    declared = (rules.in_set("channel", ("store", "web")),)
    for _ in range(2):
        _channel_failures(gate, batch, declared)
    site = quality.docs_dir(tmp_path / "quality")
    assert not (site / "index.html").exists()
    gate.publish()
    pages = sorted(site.glob("validations/channels/*/*/*.html"))
    assert len(pages) == 2
    assert "channels" in (site / "index.html").read_text()
