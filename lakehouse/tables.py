"""What every table declaration shares, and the one function that turns one into Hudi options.

A layer declares each of its tables once (bronze/tables.py, ...); paths, Hudi write options,
quarantine tables and catalog entries are all derived from that declaration here, so nobody
retypes an options dict. It imports no PySpark: the JVM-free paths (`lakehouse query`,
the dashboard) find a table's files through the same declarations.
"""

# Why one module: the declaration classes and `hudi_options` are one contract (every field a
# table declares and the Hudi setting it becomes), read side by side when a field is added.

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from datetime import timedelta
from importlib import resources
from importlib.resources.abc import Traversable

from lakehouse.rules import Rule, key_rules
from lakehouse.settings import Settings

LAYERS = ("bronze", "silver", "gold")


def table_path(warehouse: str, layer: str, name: str) -> str:
    """Where every table lives: `<warehouse>/<layer>/<table>`, on any file system."""
    return f"{warehouse.rstrip('/')}/{layer}/{name}"


TABLE_TYPES = ("MERGE_ON_READ", "COPY_ON_WRITE")
# Every commit records the layout its files were written in (lakehouse/layout.py), under a
# key Hudi copies into the commit's metadata (its prefix is Hudi's default, `_`).
LAYOUT_KEY = "_retailmax.layout"


GRANULARITIES = ("none", "value", "day", "month")


@dataclass(frozen=True)
class Partitioning:
    """The column a table is partitioned by, and how finely: not at all ("none": the column is
    only named, so that one edit partitions the table once it is large enough), by the day
    of a date column ("day", the column itself), by the month of one ("month", in the derived
    column `<column>_month`, yyyy-MM), or by any value ("value", in the derived copy
    `<column>_value`). Queries and pruned runs filter by `column` whatever the granularity
    (lakehouse/layout.py adds the derived column's filter).

    Hudi's reader takes a partition column's values from the folder names, which cannot tell
    an empty text from a null; a derived copy leaves the column itself to the data files, so
    any text reads back as written (and the folder name is URL-encoded: hudi_options).

    `from_ts` derives `column` itself as the UTC date (yyyy-MM-dd) of a timestamp column.

    The granularity is measured, not copied from the book's table 10-2: a partition costs a
    directory listing and at least one file per version, so it pays only once it holds
    enough data to fill a file (docs/architecture.md, "Table layout")."""

    column: str
    by: str = "value"
    from_ts: str | None = None

    def __post_init__(self):
        if self.by not in GRANULARITIES:
            raise ValueError(
                f"partitioning by {self.column}: `by` must be one of {GRANULARITIES}, got {self.by!r}"
            )

    @property
    def field(self) -> str:
        """The column Hudi partitions by: "" when unpartitioned, `column` by day, or the
        column derived from it (its month, or its copy)."""
        return {"none": "", "month": f"{self.column}_month", "value": f"{self.column}_value"}.get(
            self.by, self.column
        )

    @property
    def derives_field(self) -> bool:
        """Whether Hudi partitions by a column derived from `column` (its month, or a copy)."""
        return self.field not in ("", self.column)


@dataclass(frozen=True)
class Layout:
    """What a table's files cannot change once written: the column Hudi partitions by ("" when
    unpartitioned), the index, and the index's bucket count."""

    partition_field: str
    index: str = "bucket"
    buckets: int = 1

    def describe(self) -> str:
        partitions = f"partitioned by {self.partition_field}" if self.partition_field else "unpartitioned"
        if self.index != "bucket":
            return f"{partitions}, {self.index} index"
        return f"{partitions}, {self.buckets} bucket{'s' if self.buckets > 1 else ''}"

    def as_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


@dataclass(frozen=True)
class Table:
    name: str
    layer: str
    table_type: str
    record_key: tuple[str, ...]
    ordering: tuple[str, ...]
    partitioning: Partitioning | None = None
    change_log: bool = False
    description: str = ""
    # Bronze keeps the change with the highest ordering value whatever order changes arrive
    # in. Silver and Gold rows are recomputed from their inputs on every change, so the
    # latest write is the truth even when a value (say, a group's newest timestamp) shrinks.
    merge_mode: str = "EVENT_TIME_ORDERING"
    # File groups per partition of the bucket index: a table's rows are hashed by key into
    # this many files of each partition, fixed when the table is created (docs/tutorials/
    # add-a-bronze-table.md, "Choose the layout", says how to size it).
    buckets: int = 1

    def __post_init__(self):
        if self.layer not in LAYERS:
            raise ValueError(f"table {self.name}: layer must be one of {LAYERS}, got {self.layer!r}")
        if self.table_type not in TABLE_TYPES:
            raise ValueError(
                f"table {self.name}: table_type must be one of {TABLE_TYPES}, got {self.table_type!r}"
            )
        if not self.record_key or not self.ordering:
            raise ValueError(f"table {self.name}: record_key and ordering must not be empty")
        if self.buckets < 1:
            raise ValueError(f"table {self.name}: buckets must be at least 1, got {self.buckets}")

    @property
    def layout(self) -> Layout:
        return Layout(self.partition_field, "bucket", self.buckets)

    @property
    def partition_field(self) -> str:
        """The column Hudi partitions the table by, "" when it is not partitioned."""
        return self.partitioning.field if self.partitioning else ""

    @property
    def qualified_name(self) -> str:
        return f"{self.layer}.{self.name}"

    def path(self, settings: Settings) -> str:
        return table_path(settings.warehouse, self.layer, self.name)


@dataclass(frozen=True)
class Input:
    """One input of a derived table: the upstream table, the view name its transform reads it
    by, and how a change to one of its rows picks the output rows to recompute.

    `affects` is a SELECT over the view `changed` (the before- and after-image of every
    changed input row) and the input views, returning the output's affected columns (its
    key, plus the output column of any `prune`). Without it the changed rows' own values of
    those columns are used, which fits any input that carries the output's key: a line's
    old and new (date, category, region) for a daily aggregate.

    `prune = (input_column, output_column)` says that output rows with output_column = v
    are computed from this input's rows with input_column = v only (a sales line of day v
    lands in day v). A run then reads only the input rows, and the partitions of the
    output, holding the affected values: a day's changes read that day, not the year.
    `reach` widens the input side to a window of days: output rows with output_column = v
    are then computed from this input's rows with input_column from v - reach to v (a
    feature over the four weeks before a day reads those weeks, not the whole history).

    `reads` names the input columns the transform uses, when it uses few of a wide input: an
    update that leaves all of them as they were affects nothing (a product's price
    correction, for lines that keep their own price). Left out, every change counts.
    """

    table: Table
    alias: str
    affects: str | None = None
    prune: tuple[str, str] | None = None
    reach: timedelta = timedelta(0)
    reads: tuple[str, ...] | None = None

    def __post_init__(self):
        if self.reach and not self.prune:
            raise ValueError(f"input {self.alias}: `reach` widens a `prune`, and this input has none")
        if self.reach < timedelta(0) or self.reach % timedelta(days=1):
            raise ValueError(f"input {self.alias}: `reach` must be a whole number of days, got {self.reach}")


@dataclass(frozen=True, kw_only=True)
class DerivedTable(Table):
    """A Silver or Gold table: COPY_ON_WRITE, recomputed from `inputs` by `transform`, the
    name of a SQL file beside the declaration (`<layer>/transforms/<transform>.sql`) that
    reads each input by its alias and returns one row per record key.

    `expectations` are the quality rules (lakehouse/rules.py) every batch must meet before
    it is promoted into the table; the key's rules are added to them.

    `fresh_within` is the table's freshness target: how far behind the source it may fall,
    measured from the oldest source change it does not reflect yet. The continuous pipeline
    runs next the table most overdue against its target (medallion/freshness.py); the
    scheduled mode checks it after every materialization."""

    inputs: tuple[Input, ...]
    transform: str
    fresh_within: timedelta
    expectations: tuple[Rule, ...] = ()
    table_type: str = "COPY_ON_WRITE"
    merge_mode: str = "COMMIT_TIME_ORDERING"

    def __post_init__(self):
        super().__post_init__()
        if not self.inputs:
            raise ValueError(f"table {self.name}: a derived table needs at least one input")
        if self.fresh_within <= timedelta(0):
            raise ValueError(f"table {self.name}: fresh_within must be a positive timedelta")
        aliases = [i.alias for i in self.inputs]
        if len(set(aliases)) != len(aliases):
            raise ValueError(f"table {self.name}: input aliases {aliases} must be distinct")
        unreadable = [i.table.name for i in self.inputs if not i.table.change_log]
        if unreadable:
            raise ValueError(
                f"table {self.name}: inputs {unreadable} need change_log=True, "
                f"their change log is what incremental runs read"
            )
        if not self.transform_path.is_file():
            raise ValueError(f"table {self.name}: transform {self.transform_path} does not exist")
        names = [r.name for r in self.rules]
        if len(set(names)) != len(names):
            raise ValueError(f"table {self.name}: rule names {names} must be distinct")
        aliases_waited_for = {r.waits_for for r in self.rules if r.waits_for}
        if not aliases_waited_for <= set(aliases):
            raise ValueError(
                f"table {self.name}: rules wait for {sorted(aliases_waited_for)}, "
                f"which must be input aliases ({aliases})"
            )

    @property
    def rules(self) -> tuple[Rule, ...]:
        return key_rules(self.record_key) + self.expectations

    @property
    def quarantine(self) -> Table:
        """Rows kept out by a quarantine-tier rule: the row as the transform made it, the
        rules it broke, whether it is held back or quarantined, and when and from which
        input instants it was kept out. A row leaves when a later run promotes it."""
        return Table(
            name=f"{self.name}_quarantine",
            layer=self.layer,
            table_type="COPY_ON_WRITE",
            record_key=self.record_key,
            ordering=("quarantined_at",),
            merge_mode="COMMIT_TIME_ORDERING",
            description=f"Rows of {self.name} its quality rules kept out, with the reason.",
        )

    @property
    def affected_columns(self) -> tuple[str, ...]:
        """What an input change resolves to: the output key, and the output columns inputs
        are pruned by."""
        pruned = [i.prune[1] for i in self.inputs if i.prune and i.prune[1] not in self.record_key]
        return self.record_key + tuple(dict.fromkeys(pruned))

    @property
    def transform_path(self) -> Traversable:
        """Found through the layer's package, so a project submitted as a zip or wheel
        (`spark-submit --py-files`) finds it as well as a checkout does."""
        return resources.files(self.layer) / "transforms" / f"{self.transform}.sql"

    def transform_sql(self) -> str:
        return self.transform_path.read_text()

    @property
    def fingerprint(self) -> str:
        """Identifies the transform's text: a run that finds another one recorded with the
        table's rows rebuilds it (lakehouse/incremental.py)."""
        return hashlib.sha256(self.transform_sql().encode()).hexdigest()[:16]


def quality_results_table(layer: str) -> Table:
    """Every validation of a promotion into `layer`: one row per rule and run."""
    return Table(
        name=f"hudi_quality_results_{layer}",
        layer=layer,
        table_type="COPY_ON_WRITE",
        record_key=("run_id", "table_name", "rule"),
        ordering=("validated_at",),
        partitioning=Partitioning("validated_date", by="month"),
        merge_mode="COMMIT_TIME_ORDERING",
        description=f"Quality rule results of every batch promoted into {layer}: "
        f"table, input instants, rule, tier, success, unexpected count, "
        f"sample values.",
    )


def _key_generator(table: Table) -> str:
    if not table.partition_field:
        return "NON_PARTITION"
    return "COMPLEX" if len(table.record_key) > 1 else "SIMPLE"


def _parallelism(tasks: int) -> dict[str, str]:
    """Hudi sizes many steps of a commit by fixed defaults of 60 to 200 tasks, made for
    clusters; on a small machine each mostly-empty task costs more than its work, so every
    step gets the same task count as Spark's shuffles."""
    keys = (
        "upsert.shuffle",
        "insert.shuffle",
        "delete.shuffle",
        "global.index.reconcile",
        "file.listing",
        "finalize.write",
        "clean",
        "rollback",
        "markers.delete",
        "archive.delete",
    )
    return {f"hoodie.{key}.parallelism": str(tasks) for key in keys}


def _index(table: Table) -> dict[str, str]:
    """How a write finds the file group of each key.

    Hudi's simple bucket index hashes the key to one of `buckets` file groups of the row's
    partition: no lookup, and no metadata table to maintain, which is most of the fixed cost
    of a small commit (benchmarks/results/commits.md). It is not global, so a key must not
    change partition behind the writer's back: Bronze CDC tables delete the old copy from the
    update's before-image (bronze/decode.py) and derived tables from the row they replace
    (lakehouse/incremental.py). A table whose rows could change partition with nothing to say
    where they were (a stock position re-reported on a later day) is left unpartitioned.

    Nothing looks a key up, so no base file carries Hudi's bloom filter of its keys, which
    would otherwise add ~440 KB to a file of a few dozen rows.
    """
    return {
        "hoodie.index.type": "BUCKET",
        "hoodie.index.bucket.engine": "SIMPLE",
        "hoodie.bucket.index.num.buckets": str(table.buckets),
        # Hudi deletes an existing metadata table on the first write with this off.
        "hoodie.metadata.enable": "false",
        "hoodie.parquet.bloom.filter.enabled": "false",
    }


# Hudi's mergers of Spark rows, by merge mode (one strategy each, as the table declares it).
SPARK_RECORD_MERGERS = {
    "COMMIT_TIME_ORDERING": "org.apache.hudi.OverwriteWithLatestSparkRecordMerger",
    "EVENT_TIME_ORDERING": "org.apache.hudi.DefaultSparkRecordMerger",
}


def hudi_options(table: Table, settings: Settings) -> dict[str, str]:
    """Hudi write options for an upsert into `table`.

    - The index (`_index`): a key is unique across the table even when its partition value
      changes (a sales line re-dated to another month).
    - The layout (`Table.layout`) goes into every commit's metadata, so a later writer can
      tell a table laid out otherwise (lakehouse/layout.py).
    - Event-time ordering on the declared fields: for one key the record with the highest
      ordering value wins, whatever order records arrive in, replays included.
    - Deletes are rows with `_hoodie_is_deleted = true`.
    - `change_log` turns on Hudi's CDC log (before and after images), which readers of
      `hudi_table_changes(..., 'cdc', ...)` need; it can only be set when a table is created.
    - MERGE_ON_READ tables compact inline every `compact_every_delta_commits` delta commits,
      so log files do not pile up; the cleaner keeps `commits_retained` commits, which is
      how far back an incremental reader may fall behind before it must rebuild.
    """
    options = {
        "hoodie.table.name": table.name,
        "hoodie.datasource.write.table.type": table.table_type,
        "hoodie.datasource.write.operation": "upsert",
        "hoodie.datasource.write.recordkey.field": ",".join(table.record_key),
        "hoodie.datasource.write.partitionpath.field": table.partition_field,
        "hoodie.datasource.write.keygenerator.type": _key_generator(table),
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.write.record.merge.mode": table.merge_mode,
        **_index(table),
        "hoodie.table.timeline.timezone": "UTC",
        "hoodie.clean.commits.retained": str(settings.commits_retained),
        "hoodie.keep.min.commits": str(settings.commits_retained + 10),
        "hoodie.keep.max.commits": str(settings.commits_retained + 20),
        # zstd: 6-8% smaller than Hudi's default gzip and a third smaller than snappy, at
        # the same write and read times (benchmarks/results/layout.md).
        "hoodie.parquet.compression.codec": "zstd",
        "hoodie.embed.timeline.server": "false",
        "hoodie.write.markers.type": "DIRECT",
        **_parallelism(settings.shuffle_partitions),
        LAYOUT_KEY: table.layout.as_json(),
    }
    if table.partitioning and table.partitioning.by == "value":
        # Any text may be a partition value: encoded, a "/" or ".." in it cannot name another
        # folder. (Dates and months need no encoding, and a table keeps the setting it was
        # created with: Hudi refuses a writer that differs.)
        options["hoodie.datasource.write.partitionpath.urlencode"] = "true"
    if table.merge_mode == "EVENT_TIME_ORDERING":
        options["hoodie.table.ordering.fields"] = ",".join(table.ordering)
    if table.table_type == "COPY_ON_WRITE":
        # Spark's own rows through the write, where Hudi's default merger turns every row
        # into an Avro record and back: a rebuild of unified orders wrote about an eighth
        # faster (docs/benchmarks.md). Merge-on-read tables keep Avro: Spark rows there
        # need Parquet log blocks, which their existing log files are not.
        options["hoodie.write.record.merge.custom.implementation.classes"] = SPARK_RECORD_MERGERS[
            table.merge_mode
        ]
    if table.table_type == "MERGE_ON_READ":
        options |= {
            "hoodie.compact.inline": "true",
            "hoodie.compact.inline.max.delta.commits": str(settings.compact_every_delta_commits),
        }
    if table.change_log:
        options |= {
            "hoodie.table.cdc.enabled": "true",
            "hoodie.table.cdc.supplemental.logging.mode": "DATA_BEFORE_AFTER",
        }
    return options
