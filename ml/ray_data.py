"""Gold tables as Ray Datasets, for training that scales out across a Ray cluster.

Ray's own `ray.data.read_hudi` (Ray 2.60) cannot read these tables: it calls hudi-rs 0.4's
file-slice API, and hudi-rs 0.4 reads Hudi table versions 5 and 6 only, while Hudi 1.2
writes version 9, which hudi-rs reads from 0.5, where that API is gone. Daft's `read_hudi`
(0.7) reads versions 5 and 6 only as well. What `read_hudi` does for a copy-on-write table is
simple, though: a snapshot is exactly the base files of the file slices the commit sees. So
hudi-rs 0.5 names those files (time travel included) and Ray reads them as Parquet, split
across its workers like any Parquet dataset.
"""

from __future__ import annotations

from pathlib import Path

from hudi import HudiReadOptions, HudiTable

from lakehouse.settings import ConfigurationError, Settings
from lakehouse.tables import DerivedTable
from ml.features import resolve


def base_files(settings: Settings, table: DerivedTable, as_of: str | None = None) -> tuple[str, list[str]]:
    """The commit `as_of` names (completion time; the newest by default) and the base files
    that hold the table's rows as of it."""
    if table.table_type != "COPY_ON_WRITE":
        raise ConfigurationError(
            f"{table.qualified_name} is {table.table_type}: its rows are also in log files, "
            f"which only a merging reader (Spark, `lakehouse query`) applies"
        )
    _, completed = resolve(settings, table, as_of)
    path = table.path(settings)
    slices = HudiTable(path).get_file_slices(HudiReadOptions().with_as_of_timestamp(completed))
    return completed, [str(Path(path, s.partition_path, s.base_file_name)) for s in slices]


def read(settings: Settings, table: DerivedTable, as_of: str | None = None):
    """The table's rows as of a commit as a `ray.data.Dataset`, without Hudi's columns."""
    import ray.data

    _, files = base_files(settings, table, as_of)
    dataset = ray.data.read_parquet(files)
    return dataset.drop_columns([c for c in dataset.schema().names if c.startswith("_hoodie")])
