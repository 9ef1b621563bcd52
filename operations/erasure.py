"""`lakehouse erase --customer-id N`: a person's data out of the source, every layer, the
quarantine and quality-result tables, and every file of the warehouse.

The lakehouse mirrors its sources, so erasure starts where the data does: the person's
personal columns (declared with `PersonalData` on their Bronze table) are overwritten in the
source row, and the change flows through Debezium, Bronze, Silver and Gold like any other.
Everything that is not personal stays: the row, its key, country, region and tier, so the
person's sales keep their place in every aggregate. A person already deleted at the source
is found in the Bronze table's retained change history instead, and erased the same way
from everything that still holds them.

Hudi keeps old file versions (time travel, incremental readers, the change log's
before-images), so a new commit is not enough to make the data physically go. After the
pipeline has taken the change, each table holding personal columns is rewritten until its
newest file version's change log no longer carries a before-image of the old values, and
then cleaned down to that version:
- MERGE_ON_READ (Bronze): compaction, which writes the change log of the compacted updates;
  a rewrite of every row; a second compaction, whose change log now holds erased values
  on both sides;
- COPY_ON_WRITE with a change log (Silver): a rewrite of every row, for the same reason.
The quarantine and quality-result tables are redacted (operations/redaction.py) and
cleaned the same way, and so are the Great Expectations results and Data Docs pages.
"""

# Why one module: erasure is one procedure (source, every layer, side tables, old file
# versions) whose steps run in order under the same writer locks and report.

from __future__ import annotations

import time
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bronze.job import BronzeJob
from bronze.tables import BRONZE_TABLES, BronzeTable
from ingestion import database
from lakehouse import catalog, hudi, timeline
from lakehouse.incremental import Runner
from lakehouse.settings import ERASER, ConfigurationError, Settings
from lakehouse.tables import Table, quality_results_table
from medallion import parallel
from medallion.tables import derived_tables
from operations import maintenance, redaction, savepoints

# Hudi's own columns, which a rewrite must leave to Hudi (`_hoodie_is_deleted` is the
# table's: it is written, and stays).
HUDI_META_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)
LANDING_TIMEOUT_SECONDS = 180


@dataclass
class ErasureReport:
    subject: str
    ids: list[int]
    anonymized_at_source: list[int] = field(default_factory=list)
    redacted: dict[str, int] = field(default_factory=dict)
    rewritten: list[str] = field(default_factory=list)
    cleaned: list[str] = field(default_factory=list)
    text_files: int = 0
    seconds: float = 0.0

    def lines(self) -> list[str]:
        gone = sorted(set(self.ids) - set(self.anonymized_at_source))
        return [
            f"erased {self.subject} {', '.join(map(str, self.ids))} in {self.seconds:.1f} s",
            f"  source: personal columns overwritten for {self.anonymized_at_source or 'none'}"
            + (f"; already deleted there: {gone}" if gone else ""),
            f"  redacted rows: {self.redacted or 'none'}",
            f"  rewritten so no change log keeps the old values: {', '.join(self.rewritten)}",
            f"  cleaned to their newest file version: {', '.join(self.cleaned)}",
            f"  Great Expectations files redacted: {self.text_files}",
        ]


def personal_table(subject: str) -> BronzeTable:
    for table in BRONZE_TABLES:
        if table.personal and table.personal.subject == subject:
            return table
    raise ConfigurationError(f"no Bronze table declares personal data about {subject!r}")


def _stored_rows(spark: SparkSession, table: Table, settings: Settings) -> DataFrame:
    frame = hudi.read(spark, table.path(settings))
    return frame.select([c for c in frame.columns if c not in HUDI_META_COLUMNS])


def _at_source(db, table: BronzeTable, ids: list[int]) -> dict[int, dict]:
    columns = [table.personal.subject, *table.personal.erased]
    rows = db.execute(
        f"SELECT {', '.join(columns)} FROM {table.source_table} WHERE {table.personal.subject} = ANY(%s)",
        (ids,),
    ).fetchall()
    return {row[0]: dict(zip(columns[1:], row[1:])) for row in rows}


def _in_history(spark: SparkSession, settings: Settings, table: BronzeTable, ids: list[int]) -> list[dict]:
    """Every image of the subjects' rows the table still holds: its snapshot, and the before-
    and after-images of its retained change log (a person deleted at the source is there)."""
    path, personal = table.path(settings), table.personal
    if not catalog.exists(spark, path):
        return []
    subject, columns = personal.subject, list(personal.searched)
    current = hudi.read(spark, path).where(F.col(subject).isin(ids)).select(subject, *columns)
    changes = hudi.change_log(spark, path, timeline.read(spark, path, checkpoint=False).readable_since)
    images = (
        changes.select(F.explode(F.array("before", "after")).alias("json"))
        .select(
            F.get_json_object("json", f"$.{subject}").cast("long").alias(subject),
            *[F.get_json_object("json", f"$.{c}").alias(c) for c in columns],
        )
        .where(F.col(subject).isin(ids))
    )
    return [row.asDict() for row in current.unionByName(images).distinct().collect()]


def _erased_values(table: BronzeTable, subject_id: int) -> dict:
    return {
        column: value.format(id=subject_id) if isinstance(value, str) else value
        for column, value in table.personal.erased.items()
    }


def _searched_values(table: BronzeTable, images: list[dict]) -> set[str]:
    """The distinctive values the subjects had, without the placeholders erasure writes."""
    personal = table.personal
    return {
        str(image[c])
        for image in images
        for c in personal.searched
        if image.get(c) is not None
        and str(image[c]) != str(_erased_values(table, image[personal.subject])[c])
    }


def _anonymize_at_source(settings: Settings, table: BronzeTable, ids: list[int]) -> None:
    personal = table.personal
    assignments = ", ".join(f"{column} = %s" for column in personal.erased)
    with database.connect(settings, ERASER, autocommit=True) as db:
        for subject_id in ids:
            db.execute(
                f"UPDATE {table.source_table} SET {assignments} WHERE {personal.subject} = %s",
                (*_erased_values(table, subject_id).values(), subject_id),
            )
    # The old row versions stay in the table's pages until a vacuum removes them. Before
    # PostgreSQL 17 (its MAINTAIN privilege) only the table's owner may vacuum it: a vacuum
    # by another role only warns and skips, which would leave the old values behind.
    with database.connect(settings, autocommit=True) as owner:
        owner.execute(f"VACUUM {table.source_table}")


def _land(
    spark: SparkSession, settings: Settings, table: BronzeTable, ids: list[int], expected: dict[int, dict]
) -> None:
    """Drains the table's topic until Bronze holds the erased rows (or no row of a subject
    deleted at the source)."""
    subject = table.personal.subject
    deadline = time.monotonic() + LANDING_TIMEOUT_SECONDS
    while True:
        BronzeJob(spark, settings, (table,)).drain()
        rows = {
            r[subject]: r.asDict()
            for r in hudi.read(spark, table.path(settings)).where(F.col(subject).isin(ids)).collect()
        }
        if all(
            all(
                str(rows[i][c]) == str(v) if v is not None else rows[i][c] is None
                for c, v in expected[i].items()
            )
            if i in expected
            else i not in rows
            for i in ids
        ):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"the erasure of {subject} {ids} did not reach {table.qualified_name} "
                f"within {LANDING_TIMEOUT_SECONDS} s; check that Kafka Connect runs "
                f"(`make status`) and run `lakehouse erase` again"
            )
        time.sleep(2)


def _run_derived(spark: SparkSession, settings: Settings) -> None:
    runner = Runner(spark, settings)
    try:
        parallel.run_tables(runner, derived_tables(), False, settings.tables_at_once)
    finally:
        runner.record_results()


def _holding_personal_columns(spark: SparkSession, settings: Settings, source: BronzeTable) -> list[Table]:
    """The source table and every derived table whose columns include a personal one."""
    personal = set(source.personal.erased)
    derived = [
        t
        for t in derived_tables()
        if catalog.exists(spark, t.path(settings))
        and personal & set(hudi.read(spark, t.path(settings)).columns)
    ]
    return [source, *derived]


def _side_tables(spark: SparkSession, settings: Settings) -> list[Table]:
    """Every quarantine and quality-result table that exists."""
    tables = [t.quarantine for t in (*BRONZE_TABLES, *derived_tables())]
    tables += [quality_results_table(layer) for layer in ("silver", "gold")]
    return maintenance.existing(spark, settings, tables)


def _refuse_savepoints(spark: SparkSession, settings: Settings, tables: list[Table]) -> None:
    pinned = [
        f"{s.table} {s.instant}"
        for t in maintenance.existing(spark, settings, tables)
        for s in savepoints.listed(spark, settings, t)
    ]
    if pinned:
        raise ConfigurationError(
            f"savepoints keep old file versions that may hold the data to "
            f"erase: {', '.join(pinned)}; delete them first (`lakehouse "
            f"savepoint delete <table> --instant <instant>`)"
        )


def _rewrite(spark: SparkSession, settings: Settings, table: Table) -> None:
    """Rewrites every row of the table as it is, so each file group gets a new version whose
    change log holds the current values on both sides."""
    if table.table_type == "MERGE_ON_READ":
        maintenance.compact(spark, settings, table)
    hudi.write(_stored_rows(spark, table, settings), table, settings, "upsert")
    if table.table_type == "MERGE_ON_READ":
        maintenance.compact(spark, settings, table)


def _find(
    spark: SparkSession, settings: Settings, table: BronzeTable, ids: list[int]
) -> tuple[list[int], set[str]]:
    """(the subjects still at the source, the distinctive values any of them ever had);
    fails, erasing nothing, when a subject is nowhere to be found."""
    subject = table.personal.subject
    with database.connect(settings, ERASER) as db:
        at_source = _at_source(db, table, ids)
    images = [{subject: i, **values} for i, values in at_source.items()]
    images += _in_history(spark, settings, table, ids)
    unknown = sorted(set(ids) - {image[subject] for image in images})
    if unknown:
        raise ConfigurationError(
            f"no {subject} {', '.join(map(str, unknown))}: not in "
            f"{table.source_table} and not in what {table.qualified_name} "
            f"holds (its rows and retained change log); nothing was erased"
        )
    return sorted(at_source), _searched_values(table, images)


def _redact_side_tables(
    spark: SparkSession, settings: Settings, table: BronzeTable, ids: list[int], values: set[str]
) -> dict[str, int]:
    """Rewrites the quarantine and quality-result rows about or mentioning the subjects;
    returns how many per table."""
    redacted = {}
    for side_table in _side_tables(spark, settings):
        rows = redaction.redact(
            _stored_rows(spark, side_table, settings),
            table.personal.subject,
            ids,
            table.personal.erased,
            values,
        ).cache()
        if count := rows.count():
            hudi.write(rows, side_table, settings, "upsert")
            redacted[side_table.qualified_name] = count
        rows.unpersist()
    return redacted


def erase(spark: SparkSession, settings: Settings, subject: str, ids: list[int]) -> ErasureReport:
    """Erases the subjects' personal data everywhere; the caller holds every layer's writer
    lock. Safe to run again after a failure: each step finds what is left to do."""
    began = time.monotonic()
    table = personal_table(subject)
    report = ErasureReport(subject, sorted(set(ids)))
    at_source, values = _find(spark, settings, table, report.ids)
    holding = _holding_personal_columns(spark, settings, table)
    _refuse_savepoints(spark, settings, holding + _side_tables(spark, settings))

    _anonymize_at_source(settings, table, at_source)
    report.anonymized_at_source = at_source
    _land(spark, settings, table, report.ids, {i: _erased_values(table, i) for i in at_source})
    _run_derived(spark, settings)
    report.redacted = _redact_side_tables(spark, settings, table, report.ids, values)

    for held in holding:
        if held.change_log:
            _rewrite(spark, settings, held)
            report.rewritten.append(held.qualified_name)
    # Readers take the rewrites before the cleaner removes the versions they were made from.
    _run_derived(spark, settings)
    for done in [*holding, *_side_tables(spark, settings)]:
        maintenance.clean(
            spark, settings, done, "clean_policy => 'KEEP_LATEST_FILE_VERSIONS', file_versions_retained => 1"
        )
        report.cleaned.append(done.qualified_name)
    report.text_files = len(redaction.redact_text_files(settings.quality_dir, values))
    report.seconds = time.monotonic() - began
    return report
