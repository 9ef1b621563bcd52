"""What a run of a derived table reports: the line `lakehouse run` prints, where its input
rows went (the reconciliation), and the schema of the validation results every run records
in its layer's `quality_results` table.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pyspark.sql import types as T


@dataclass(frozen=True)
class Reconciliation:
    """Where a promotion's input rows (the output keys it recomputed) went."""

    rows_in: int
    promoted: int
    quarantined: int
    held_back: int
    removed: int

    def line(self) -> str:
        return (
            f"{self.rows_in} in = {self.promoted} promoted + {self.quarantined} quarantined + "
            f"{self.held_back} held back + {self.removed} removed at the source"
        )


@dataclass(frozen=True)
class RunReport:
    table: str
    mode: str  # "incremental", "full" or "idle"
    changes_read: int = 0
    upserted: int = 0
    deleted: int = 0
    seconds: float = 0.0
    note: str = ""
    reconciliation: Reconciliation | None = None
    breaches: tuple[str, ...] = ()  # warn- and quarantine-tier rules the batch broke

    def as_dict(self) -> dict:
        """The report as `lakehouse silver --json` prints it."""
        report = dataclasses.asdict(self)
        report["seconds"] = round(self.seconds, 3)
        return report

    def line(self) -> str:
        if self.mode == "idle":
            text = f"{self.table:<40} no new input; nothing committed ({self.seconds:.1f} s)"
            return f"{text}  ({self.note})" if self.note else text
        what = "incremental" if self.mode == "incremental" else "full refresh"
        text = (
            f"{self.table:<40} {what:<12} {self.changes_read:>9} changes read  "
            f"{self.upserted:>9} upserted  {self.deleted:>7} deleted  {self.seconds:6.1f} s"
        )
        lines = [f"{text}  ({self.note})" if self.note else text]
        if self.reconciliation:
            lines.append(f"    reconciled: {self.reconciliation.line()}")
        lines += [f"    {breach}" for breach in self.breaches]
        return "\n".join(lines)


RESULTS_SCHEMA = T.StructType(
    [
        T.StructField("run_id", T.StringType()),
        T.StructField("table_name", T.StringType()),
        T.StructField("rule", T.StringType()),
        T.StructField("tier", T.StringType()),
        T.StructField("input_instants", T.StringType()),
        T.StructField("full_refresh", T.BooleanType()),
        T.StructField("success", T.BooleanType()),
        T.StructField("rows_checked", T.LongType()),
        T.StructField("unexpected_count", T.LongType()),
        T.StructField("sample_values", T.StringType()),
        T.StructField("validated_at", T.TimestampType()),
        T.StructField("validated_date", T.DateType()),
    ]
)
