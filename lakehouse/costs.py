"""Which path a derived table's run takes: the incremental one, or a rebuild from full
snapshots when the changes waiting would cost more than that (docs/architecture.md, "A run
costs at most a rebuild").

A run knows before it starts how many changes its inputs' commits recorded since its
checkpoint, and what each path cost this table the last time it ran. An incremental run's
cost grows with the changes it reads; a rebuild's does not. So after a backlog (a first
build while the workload runs, a bulk load, a machine that was busy) a run rebuilds once
instead of reading a change log larger than the table, and the next runs are small again.

An incremental run costs a fixed part (a dozen small Spark jobs and a commit, whatever it
reads) and a part per change. The newest incremental run and the one just before it, when
they read change counts at least twofold apart (a run that read none included), tell the
two parts apart, and the estimate is the line through them. Scaled alone, a run of a
hundred changes put a run of a few at next to nothing, and at the demo's size every such
run went incrementally at about twice a rebuild's cost. With one run to go by, or two that
disagree (the one over more changes cheaper, as noise on a busy machine makes them), the
estimate is the newest run's seconds scaled by how many changes wait now against how many
it read, down as well as up. Scaling down is optimistic, and that is what keeps the choice
honest: an estimate too low sends a run down the incremental path, which measures it, and
the next choice has two runs to go by; an estimate too high would send every run to
rebuild, and the incremental path would never be measured again. One slow incremental run
(a backlog read while the machine was busy) would otherwise have a table rebuilt on every
run from then on. Either path is exact; only the time differs.

Either measurement can go stale, and the path not taken is never measured again on its own:

- A table's first build runs in a cold JVM, often beside Bronze landing a backlog, and can
  take many times what a rebuild takes a few minutes later. Every run would then pay for an
  incremental path several times dearer than a rebuild. So once the incremental runs since
  the last rebuild have together taken `REMEASURE_AFTER` times what it did, the next run
  rebuilds, which measures it again.
- Scaled up, a small incremental run (mostly fixed cost) overestimates a larger one: ten
  changes that took 9 s put a hundred at 90 s, against a rebuild of 10, so every run rebuilt
  and the table's rebuilds grew with it. So when the estimate reaches more than
  `SCALED_UP_BEYOND` times the most changes a measured run read, and the rebuilds since the
  last incremental run have together taken `REMEASURE_AFTER` times that estimate, the next
  run goes incrementally, which measures it at today's size. An estimate within the measured
  runs' reach is a measurement, not a guess: measuring it again each time cost unified
  orders an incremental run twice a rebuild's every few minutes. A backlog's estimate
  (thousands of changes) stays out of reach: its rebuilds would have to add up to twice it
  first.

Both are rent-or-buy rules: at most a third of the time goes to the path that turns out dearer.

Costs are kept per warehouse and table in `<state dir>/costs/`, beside the other state of
the runs on this machine (a benchmark's warehouse does not teach the demo's tables); without
them a run takes the incremental path.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from lakehouse.reports import RunReport
from lakehouse.settings import Settings

INCREMENTAL, FULL = "incremental", "full"

# The path not taken runs again, to be measured again, once the runs of the other path since
# it last ran have together taken this many times what it is expected to cost.
REMEASURE_AFTER = 2
# An incremental estimate for more than this many times the changes its runs read is a
# guess, which the rule above measures again; one for fewer is a measurement. Two runs this
# far apart in changes read tell a run's fixed cost from its cost per change.
SCALED_UP_BEYOND = 2


@dataclass(frozen=True)
class Measured:
    seconds: float
    changes: int


@dataclass(frozen=True)
class Choice:
    """The path a run takes, and why where it is not the one its estimate points to alone."""

    path: str
    reason: str | None = None


@dataclass(frozen=True)
class PathCosts:
    """What each path last cost one table; None for a path it has not taken yet."""

    incremental: Measured | None = None
    full: Measured | None = None
    # The incremental run before the newest, when their changes read are at least
    # SCALED_UP_BEYOND-fold apart (a run that read none included): the estimate's line.
    other_scale: Measured | None = None
    last: str | None = None  # the path the newest run took
    since_rebuild: float = 0.0  # seconds the incremental runs after the last rebuild took
    since_incremental: float = 0.0  # seconds the rebuilds after the last incremental run took

    @property
    def expected_seconds(self) -> float:
        """What the next run is expected to take: what the newest one did (0 before any)."""
        newest = self.incremental if self.last == INCREMENTAL else self.full
        return newest.seconds if newest else 0.0

    def estimate(self, changes: int) -> float | None:
        """Seconds an incremental run over `changes` changes would take, if one was measured."""
        if self.incremental is None:
            return None
        basis = self._basis()
        if len(basis) == 1:
            return self.incremental.seconds * changes / max(1, self.incremental.changes)
        small, large = sorted(basis, key=lambda m: m.changes)
        per_change = (large.seconds - small.seconds) / (large.changes - small.changes)
        return max(0.0, small.seconds - per_change * small.changes) + per_change * changes

    def _basis(self) -> list[Measured]:
        """The incremental runs the estimate comes from: the newest, and the one at another
        scale when the one over more changes cost more (otherwise noise outweighs a change's
        cost, and the newest is scaled alone)."""
        other = self.other_scale
        if other is None or (other.changes > self.incremental.changes) != (
            other.seconds > self.incremental.seconds
        ):
            return [self.incremental]
        return [self.incremental, other]

    def choose(self, changes: int) -> Choice:
        """The path of a run over `changes` changes."""
        estimate = self.estimate(changes)
        if estimate is None or self.full is None:
            return Choice(INCREMENTAL)
        if estimate > self.full.seconds:
            guessed = changes > SCALED_UP_BEYOND * max(m.changes for m in self._basis())
            if guessed and self.since_incremental >= REMEASURE_AFTER * estimate:
                return Choice(
                    INCREMENTAL,
                    f"incremental to measure it again: the rebuilds since the last incremental "
                    f"run took {self.since_incremental:.0f} s, {changes} changes were estimated "
                    f"at {estimate:.0f} s",
                )
            return Choice(
                FULL,
                f"rebuilt: {changes} changes would take about {estimate:.0f} s incrementally "
                f"({', '.join(f'{m.changes} took {m.seconds:.1f} s' for m in self._basis())}), "
                f"a rebuild took {self.full.seconds:.1f} s",
            )
        if self.since_rebuild >= REMEASURE_AFTER * self.full.seconds:
            return Choice(
                FULL,
                f"rebuilt to measure it again: the incremental runs since the last rebuild "
                f"took {self.since_rebuild:.0f} s, it took {self.full.seconds:.1f} s",
            )
        return Choice(INCREMENTAL)


def _directory(settings: Settings) -> Path:
    warehouse = re.sub(r"[^A-Za-z0-9]+", "_", settings.warehouse).strip("_")
    return settings.state_dir / "costs" / warehouse


def _path(settings: Settings, table: str) -> Path:
    return _directory(settings) / f"{table}.json"


def forget(settings: Settings) -> None:
    """Drops what the runs on the warehouse measured, for a warehouse deleted to be built anew
    (a benchmark's): its tables' first runs then choose as on a new machine."""
    shutil.rmtree(_directory(settings), ignore_errors=True)


def read(settings: Settings, table: str) -> PathCosts:
    """What the table's runs measured; nothing when no run has, or the file cannot be read
    (by the metrics endpoint in a container of its own, say)."""
    try:
        stored = json.loads(_path(settings, table).read_text())
    except (OSError, ValueError):
        return PathCosts()
    return PathCosts(
        **{mode: Measured(**stored[mode]) for mode in (INCREMENTAL, FULL) if mode in stored},
        other_scale=Measured(**stored["other_scale"]) if "other_scale" in stored else None,
        last=stored.get("last"),
        since_rebuild=stored.get("since_rebuild", 0.0),
        since_incremental=stored.get("since_incremental", 0.0),
    )


def record(settings: Settings, report: RunReport) -> None:
    """Keeps what the path `report` took cost; an idle run measures neither. An incremental
    run that read no change (its inputs' commits changed nothing) measured only its fixed
    cost: it becomes the newest run's partner at another scale (`other_scale`), while the
    newest run that read changes stays the one to scale."""
    if report.mode not in (INCREMENTAL, FULL):
        return
    path = _path(settings, report.table)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        stored = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        stored = {}
    # A run that measured its path restarts that path's re-measure clock (see the module's
    # docstring); every run adds its seconds to the other path's.
    spent, measured = (
        ("since_incremental", "since_rebuild")
        if report.mode == FULL
        else ("since_rebuild", "since_incremental")
    )
    measurement = {"seconds": round(report.seconds, 2), "changes": report.changes_read}
    newest = stored.get(INCREMENTAL)
    if report.mode == INCREMENTAL and newest:
        if _apart(report.changes_read, newest["changes"]):
            stored["other_scale"] = newest if report.changes_read else measurement
        else:
            # A pair of runs is the newest and the one just before it: an older partner would
            # draw the line through conditions long gone.
            stored.pop("other_scale", None)
    if report.mode == FULL or report.changes_read:
        stored[report.mode] = measurement
        stored[measured] = 0.0
    stored[spent] = round(stored.get(spent, 0.0) + report.seconds, 2)
    stored["last"] = report.mode
    # Written whole, then renamed: a reader never sees half a file.
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(stored, sort_keys=True))
    partial.replace(path)


def _apart(changes: int, other: int) -> bool:
    """Whether runs over these many changes are far enough apart to tell a run's fixed cost
    from its cost per change."""
    fewer, more = sorted((changes, other))
    return more >= SCALED_UP_BEYOND * max(1, fewer)
