"""What one incremental commit of a derived table writes, from the rows recomputed for the
affected keys and the rows the table holds for them.

Pure functions of DataFrames (no reads, no writes), so each case is a unit test
(tests/unit/test_changeset.py):
- a recomputed row that is new, or differs from the one the table holds, is upserted; an
  identical one is not rewritten;
- a held row whose key the recomputation no longer produces in its partition is deleted:
  the key is gone, or it moved to another partition, where its new copy is an upsert (the
  bucket index is not global, so the old copy would otherwise stay beside it);
- a held row whose key the quality gate now keeps out is deleted, and the kept-out
  recomputed row is not upserted (it goes to the quarantine instead).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse.hudi import DELETED
from lakehouse.partitions import with_partition_field
from lakehouse.tables import Table


@dataclass(frozen=True)
class Changeset:
    table: Table
    upserts: DataFrame  # recomputed rows, new or changed, not kept out
    missing: DataFrame  # held rows whose key, in their partition, was not recomputed
    kept_out: DataFrame  # held rows whose key the gate keeps out now

    def still_produced(self, produced: DataFrame) -> Changeset:
        """Without the missing rows that `produced` yields in the same partition. A run that
        recomputed from pruned inputs cannot tell a row that left the pruned values from one
        that is gone; `produced`, the transform over whole inputs for just the missing keys,
        can."""
        placed = _placement_columns(self.table)
        missing = with_partition_field(self.missing, self.table).join(
            with_partition_field(produced, self.table).select(placed), placed, "left_anti"
        )
        return dataclasses.replace(self, missing=missing.select(self.missing.columns))

    def batch(self) -> DataFrame:
        """The one upsert that applies the changeset: deletes carry `_hoodie_is_deleted`. A
        held row can be both missing and kept out (its key moved to another partition and
        the gate keeps it out now): it is deleted once, as Hudi counts it."""
        deletes = self.missing.unionByName(self.kept_out).distinct()
        return self.upserts.withColumn(DELETED, F.lit(False)).unionByName(
            deletes.withColumn(DELETED, F.lit(True))
        )


def changeset(table: Table, recomputed: DataFrame, held: DataFrame, kept_out_keys: DataFrame) -> Changeset:
    """The changeset that makes `held` (the table's rows for the affected keys) equal to
    `recomputed` (the transform's rows for the same keys), less the keys the gate keeps out."""
    keys = list(table.record_key)
    held = held.select(recomputed.columns)
    upserts = recomputed.join(kept_out_keys, keys, "left_anti").exceptAll(held)
    placed = _placement_columns(table)
    missing = with_partition_field(held, table).join(
        with_partition_field(recomputed, table).select(placed), placed, "left_anti"
    )
    return Changeset(
        table,
        upserts=upserts,
        missing=missing.select(held.columns),
        kept_out=held.join(kept_out_keys, keys, "left_semi"),
    )


def _placement_columns(table: Table) -> list[str]:
    """Where a row lies: its key, and the partition it is written in."""
    return list(dict.fromkeys([*table.record_key, *filter(None, [table.partition_field])]))
