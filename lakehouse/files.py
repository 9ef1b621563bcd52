"""What a table's data files add up to on storage, from a listing of them: how many, how
large, and in how many partitions. One pure function, fed by Hadoop's listing where a JVM
runs (`lakehouse tables`) and by pyarrow's where none does (`listed`: the dashboard, the
metrics and the benchmarks), so a small-file problem shows the same numbers everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

# Hudi's own files inside a table's folder: the timeline and metadata under `.hoodie`, and
# the marker file in every partition. Neither is data, nor are the checksum files Hadoop's
# local file system writes beside every file (which its own listings hide).
HUDI_FOLDER = ".hoodie"
PARTITION_MARKER = ".hoodie_partition_metadata"
CHECKSUM_SUFFIX = ".crc"


@dataclass(frozen=True)
class Storage:
    files: int
    bytes: int
    partitions: int

    @property
    def average_bytes(self) -> int:
        return self.bytes // self.files if self.files else 0


def is_data(relative_path: str) -> bool:
    """Whether a file, by its path inside the table's folder, holds data (a base, log or
    change-log file of any version)."""
    parts = relative_path.strip("/").split("/")
    return (
        HUDI_FOLDER not in parts[:-1]
        and not parts[-1].startswith(PARTITION_MARKER)
        and not parts[-1].endswith(CHECKSUM_SUFFIX)
    )


def storage(listing: list[tuple[str, int]]) -> Storage:
    """Totals of a table's data files, from (path inside the table's folder, bytes) of every
    file under it; the folders holding them are its partitions (the table's own folder is
    the one partition of an unpartitioned table)."""
    data = [(path.strip("/"), size) for path, size in listing if is_data(path)]
    return Storage(
        files=len(data),
        bytes=sum(size for _, size in data),
        partitions=len({path.rpartition("/")[0] for path, _ in data}),
    )


def listed(uri: str) -> Storage | None:
    """Totals of the data files of the table at `uri`, listed through pyarrow's file systems
    (local and S3), so no JVM is needed; None for a table not written yet or storage pyarrow
    cannot list."""
    import pyarrow
    import pyarrow.fs

    try:
        filesystem, root = pyarrow.fs.FileSystem.from_uri(uri)
        found = filesystem.get_file_info(pyarrow.fs.FileSelector(root, recursive=True, allow_not_found=True))
    except (OSError, pyarrow.ArrowException):
        return None
    listing = [(info.path[len(root) :], info.size) for info in found if info.type == pyarrow.fs.FileType.File]
    return storage(listing) if listing else None
