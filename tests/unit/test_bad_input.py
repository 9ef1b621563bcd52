"""The hostile corpus (tests/bad_input.py) through the decoder: each message quarantined with
exactly its reason, or landed with exactly its values, and nothing else."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from bronze.decode import classify, split
from bronze.tables import BRONZE_TABLES
from tests.bad_input import CASES, markdown

ROOT = Path(__file__).resolve().parents[2]


def test_the_corpus_has_sixty_cases_or_more_across_the_five_topics():
    assert len(CASES) >= 60
    assert {case.table.name for case in CASES} == {table.name for table in BRONZE_TABLES}
    assert len({case.name for case in CASES}) == len(CASES)


def test_the_bad_input_page_is_the_corpus():
    assert (ROOT / "docs" / "bad-input.md").read_text() == markdown(), (
        "docs/bad-input.md is out of date: python -m tests.bad_input > docs/bad-input.md"
    )


@pytest.fixture(scope="module")
def fates(spark):
    """Kafka offset (the case's index) -> the landed row, or the quarantine's error."""
    found = {}
    for table in BRONZE_TABLES:
        records = [
            (case.kafka_key(), case.kafka_value(), table.topic, 0, offset, datetime(2026, 6, 1))
            for offset, case in enumerate(CASES)
            if case.table.name == table.name
        ]
        raw = spark.createDataFrame(
            records, "key binary, value binary, topic string, partition int, offset long, timestamp timestamp"
        )
        rows, quarantined = split(classify(raw, table), table)
        found |= {row._kafka_offset: row for row in rows.collect()}
        found |= {bad._kafka_offset: bad.error for bad in quarantined.collect()}
    return found


@pytest.mark.parametrize("offset", range(len(CASES)), ids=[case.name for case in CASES])
def test_each_hostile_message_is_quarantined_with_its_reason_or_lands_exactly(fates, offset):
    case = CASES[offset]
    fate = fates[offset]
    if case.error is not None:
        assert fate == case.error
    else:
        assert not isinstance(fate, str), f"quarantined: {fate}"
        assert {column: fate[column] for column in case.lands} == case.lands
