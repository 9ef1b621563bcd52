"""Finding a person's data in rows and text, and overwriting it: the pure half of
`lakehouse erase` (operations/erasure.py does the I/O).

Two kinds of row hold a person's data outside the tables that declare it:
- rows *about* the person: a column names them (`customer_id = 42`), or a raw message does
  (`"customer_id": 42` in a quarantined Debezium event). Their personal columns become
  NULL, and so do the personal fields of the JSON they carry;
- rows that *mention* the person: a distinctive value of theirs (an e-mail address, a
  name) appears in a text column, as a rule's sample or inside a message. Each occurrence
  becomes `[erased]`, whoever the row is about.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

ERASED = "[erased]"
# Text files of the Great Expectations project that can quote a failing value.
TEXT_SUFFIXES = (".json", ".html")


def occurrences(values: Iterable[str]) -> str | None:
    """A regular expression (Java's and Python's alike) matching any of `values` standing
    alone: not inside a longer word, so "Ann" leaves "Anna" alone."""
    distinct = sorted({v for v in values if v}, key=len, reverse=True)
    if not distinct:
        return None
    return r"(?<!\w)(?:" + "|".join(re.escape(v) for v in distinct) + r")(?!\w)"


def names_subject(subject: str, subject_ids: Iterable[int]) -> str:
    """A regular expression matching JSON that names one of the subjects: `"customer_id": 42`
    (a number or a string, as Debezium keys and events carry it)."""
    ids = "|".join(str(int(i)) for i in subject_ids)
    return rf'"{re.escape(subject)}"\s*:\s*"?(?:{ids})(?![0-9])'


def json_fields(columns: Iterable[str]) -> str:
    """A regular expression matching a JSON field of `columns` with its value (a string, a
    number, a boolean or null); group 1 is the field's name."""
    names = "|".join(re.escape(c) for c in columns)
    return rf'"({names})"\s*:\s*(?:"(?:[^"\\]|\\.)*"|[-0-9.eE+]+|true|false|null)'


def _text_columns(frame: DataFrame) -> list[str]:
    return [f.name for f in frame.schema if isinstance(f.dataType, StringType)]


def about_subjects(frame: DataFrame, subject: str, subject_ids: list[int]) -> Column:
    """Rows about one of the subjects: by their subject column, or by JSON text naming them."""
    found = F.lit(False)
    if subject in frame.columns:
        found = found | F.col(subject).isin(subject_ids)
    pattern = names_subject(subject, subject_ids)
    for name in _text_columns(frame):
        found = found | F.coalesce(F.col(name).rlike(pattern), F.lit(False))
    return found


def mentioning(frame: DataFrame, values: Iterable[str]) -> Column:
    """Rows with one of `values` standing alone in a text column."""
    pattern = occurrences(values)
    found = F.lit(False)
    if pattern is None:
        return found
    for name in _text_columns(frame):
        found = found | F.coalesce(F.col(name).rlike(pattern), F.lit(False))
    return found


def redact(
    frame: DataFrame, subject: str, subject_ids: list[int], personal: Iterable[str], values: Iterable[str]
) -> DataFrame:
    """The rows of `frame` about or mentioning the subjects, with their data overwritten;
    the other rows are left out (they need no rewrite). Key and lineage columns stay, so an
    upsert of the result replaces exactly the rows it came from."""
    personal, values = tuple(personal), tuple(values)
    about = about_subjects(frame, subject, subject_ids)
    mentioned = occurrences(values)
    fields = json_fields(personal)
    columns = []
    for f in frame.schema:
        column = F.col(f.name)
        if f.name in personal:
            column = F.when(about, F.lit(None).cast(f.dataType)).otherwise(column)
        elif isinstance(f.dataType, StringType):
            column = F.when(about, F.regexp_replace(column, fields, '"$1":null')).otherwise(column)
            if mentioned:
                column = F.regexp_replace(column, mentioned, ERASED)
        columns.append(column.alias(f.name))
    return frame.where(about | mentioning(frame, values)).select(columns)


def redact_text_files(directory: Path, values: Iterable[str]) -> list[Path]:
    """Overwrites every standing-alone occurrence of `values` in the text files under
    `directory`; returns the files it changed."""
    pattern = occurrences(values)
    if pattern is None or not directory.is_dir():
        return []
    matcher, changed = re.compile(pattern), []
    for path in sorted(directory.rglob("*")):
        if path.suffix not in TEXT_SUFFIXES or not path.is_file():
            continue
        text = path.read_text(errors="surrogateescape")
        redacted = matcher.sub(ERASED, text)
        if redacted != text:
            path.write_text(redacted, errors="surrogateescape")
            changed.append(path)
    return changed
