"""A table's files as its declaration lays them out, and the one-time rewrite of a table that
an earlier release (or an earlier declaration) laid out otherwise.

The layout is what a table's files cannot change once written: the column Hudi partitions
by, the index, and the bucket count (the bucket index finds a key's file group by hashing
it over that many buckets). A writer that finds a table written in another layout copies
its current rows into the declared one before writing (`ensure`); the copy keeps the
table's checkpoint (commit metadata), so the table itself carries on incrementally, while
the tables reading its change log rebuild once, as after any rewrite of their input.
"""

from __future__ import annotations

import json
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakehouse import catalog, timeline
from lakehouse.hudi import DELETED, snapshot, write
from lakehouse.settings import ConfigurationError, Settings
from lakehouse.tables import LAYOUT_KEY, Layout, Table

# Suffixes of the two folders beside a table while it is rewritten: the copy in the new
# layout, and the old files once the copy has taken the table's place.
STAGED, RETIRED = ".relayout", ".retired"


def stored(spark: SparkSession, path: str, declared: Layout) -> Layout:
    """The layout the table at `path` was written in: its partition field and index from its
    table properties, its bucket count from the newest commit that recorded one. A table
    written before commits recorded it is taken to have the declared count, the only one
    earlier releases used."""
    properties = catalog.table_properties(spark, path)
    fields = properties.get("hoodie.table.partition.fields", "")
    partition_field = ",".join(f.split(":")[0] for f in fields.split(",") if f)
    metadata_indexes = properties.get("hoodie.table.metadata.partitions", "").split(",")
    recorded = timeline.newest_metadata(spark, path, LAYOUT_KEY)
    buckets = json.loads(recorded)["buckets"] if recorded else declared.buckets
    index = "record" if "record_index" in metadata_indexes else "bucket"
    return Layout(partition_field, index, buckets)


_checked: set[str] = set()


def ensure(spark: SparkSession, settings: Settings, table: Table) -> str | None:
    """Makes sure `table` is laid out as declared before this process writes it: a table laid
    out otherwise is rewritten in the declared layout, once. Returns what was done, if
    anything, for the caller to report. Checked once per process and table."""
    path = table.path(settings)
    if path in _checked:
        return None
    _finish_interrupted(spark, path)
    message = None
    if catalog.exists(spark, path):
        declared = table.layout
        found = stored(spark, path, declared)
        if found != declared:
            _refuse_savepoints(spark, table, path, found)
            began = time.monotonic()
            rows = _rewrite(spark, settings, table)
            message = (
                f"{table.qualified_name}: laid out {found.describe()}, declared "
                f"{declared.describe()}; rewrote its {rows:,} rows in the declared "
                f"layout ({time.monotonic() - began:.1f} s). Tables that read it rebuild "
                f"once."
            )
    _checked.add(path)
    return message


def _refuse_savepoints(spark: SparkSession, table: Table, path: str, found: Layout) -> None:
    """A rewrite starts the table's timeline anew, so its savepoints could no longer restore
    it: whoever took them decides, not the writer."""
    pinned = timeline.savepoints(spark, path)
    if pinned:
        raise ConfigurationError(
            f"{table.qualified_name} is laid out {found.describe()} and declared "
            f"{table.layout.describe()}, but rewriting it would drop its savepoints "
            f"{', '.join(pinned)}; delete them (`lakehouse savepoint delete "
            f"{table.qualified_name} --instant <instant>`) or declare the table's old layout"
        )


def _rewrite(spark: SparkSession, settings: Settings, table: Table) -> int:
    """Copies the table's current rows into the declared layout beside it, carrying its
    checkpoint and transform fingerprint, then puts the copy in its place."""
    path = table.path(settings)
    found = timeline.read(spark, path)
    carried = {}
    if found.last_consumed is not None:
        carried[timeline.CONSUMED_KEY] = json.dumps(found.last_consumed, sort_keys=True)
    if found.last_transform:
        carried[timeline.TRANSFORM_KEY] = found.last_transform
    rows = snapshot(spark, table, settings).persist()
    try:
        count = rows.count()
        write(rows.withColumn(DELETED, F.lit(False)), table, settings, "insert", carried, path=path + STAGED)
    finally:
        rows.unpersist()
    storage = _Storage(spark)
    storage.rename(path, path + RETIRED)
    storage.rename(path + STAGED, path)
    storage.delete(path + RETIRED)
    catalog.forget(spark, table)
    catalog.ensure_registered(spark, settings, table)
    return count


def _finish_interrupted(spark: SparkSession, path: str) -> None:
    """Completes or undoes a rewrite that a crash interrupted: the old files are only moved
    aside once the copy is whole, so a copy beside them is finished and takes their place;
    a copy alone may be partial and is deleted (the next rewrite starts over)."""
    storage = _Storage(spark)
    if storage.exists(path + RETIRED):
        if not storage.exists(path):
            storage.rename(path + STAGED, path)
        storage.delete(path + RETIRED)
    elif storage.exists(path + STAGED):
        storage.delete(path + STAGED)


class _Storage:
    """The warehouse's file system (local, HDFS or S3), through Hadoop's API."""

    def __init__(self, spark: SparkSession):
        self.jvm = spark.sparkContext._jvm
        self.conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _path(self, path: str):
        hadoop_path = self.jvm.org.apache.hadoop.fs.Path(path)
        return hadoop_path, hadoop_path.getFileSystem(self.conf)

    def exists(self, path: str) -> bool:
        hadoop_path, fs = self._path(path)
        return fs.exists(hadoop_path)

    def rename(self, source: str, target: str) -> None:
        hadoop_source, fs = self._path(source)
        if not fs.rename(hadoop_source, self._path(target)[0]):
            raise OSError(f"could not rename {source} to {target}")

    def delete(self, path: str) -> None:
        hadoop_path, fs = self._path(path)
        fs.delete(hadoop_path, True)
