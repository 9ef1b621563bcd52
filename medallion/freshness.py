"""Which derived table the continuous pipeline runs next: the one most overdue against its
freshness target (`DerivedTable.fresh_within`), after the derived tables it reads.

A table's standing is how far behind the source it is: the age of the oldest source change
it does not reflect yet (monitoring/state.py measures it from the tables' commits and
Kafka). It becomes *due* when the time left before it misses its target is what its run,
with its inputs' runs, last took (lakehouse/costs.py), plus the longest such chain of runs
of any table (the loop may have just started that one when this table comes due), plus a
tenth of its target (`PLANNING_MARGIN`) for the waits no measured run foretells. Among the
due tables, the one furthest into its target (behind / target) runs first. The loop runs
`TABLES_AT_ONCE` such chains side by side, each in a slot of its own, and whenever a slot
frees it reads the standings again. One more slot is kept for the chain to the tables with
the tightest target (`tightest`: daily sales), whose Spark jobs also take the cores first:
it never waits for another table's run to end. While that chain's table is past its target,
a chain to a table with a looser one starts only when its table is at least as far into
its own (`pressing`): the cores go to the table most overdue, not shared with runs that have
time to spare (when `make up` starts on a Kafka holding the seed, or after a burst). A chain
never starts beside a run of a table it reads, or beside a chain in which such a table is
still to run (`downstream`): it would take that table's state before the run's commit, and
run again.

A table runs only when a run can make it fresher: its inputs, or the derived tables it
reads, hold changes it has not taken. Between changes nothing runs, so a quiet source costs
no Spark jobs. These are the conventions of Dagster's freshness policies (a maximum lag per
asset, materialized when needed to stay within it), which the scheduled mode follows too.

The same targets say how often continuous Bronze commits each topic (`bronze_triggers`): no
more often than the tables downstream of it need.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import inf

from lakehouse.tables import DerivedTable

# Continuous Bronze commits a table at least this many times within the tightest freshness
# target downstream of it: the wait for its next micro-batch takes at most this share of
# the target, and the rest is left to the batch itself and the derived runs after it.
BRONZE_BATCHES_PER_TARGET = 5
# A table comes due this share of its target early. Planned to the second, the tables with
# minutes of target started a little late whenever the run they waited for (an input's, or a
# slot's) took longer than it last did, as under a backlog, and ended past their targets.
PLANNING_MARGIN = 0.1


@dataclass(frozen=True)
class Standing:
    """Where one derived table stands: seconds behind the source (None when unknown), and
    whether its inputs hold commits it has not taken yet."""

    behind: float | None
    waiting: bool

    def over_target(self, table: DerivedTable) -> float:
        """Seconds past its target; 0 within it."""
        return max(0.0, (self.behind or 0.0) - table.fresh_within.total_seconds())

    def into_target(self, table: DerivedTable) -> float:
        """How far into its target it is: behind / target, past it above 1."""
        return (self.behind or 0.0) / table.fresh_within.total_seconds()


def next_runs(
    tables: list[DerivedTable],
    standings: dict[str, Standing],
    expected_seconds: Callable[[str], float],
    held: set[str] = frozenset(),
    only: set[str] | None = None,
    at_least: float = 0.0,
) -> list[DerivedTable]:
    """The runs to make next, in order: the due table most overdue against its target,
    preceded by the derived tables it reads that have changes waiting (their inputs first).
    Empty when no table is due. `tables` are in pipeline order (medallion/tables.py);
    `expected_seconds` is a table's last measured run; `held` tables wait (a quality gate
    blocked them, or an input has no data yet) and are neither run nor waited for; `only`,
    when given, names the tables a chain may be run for (its upstream runs are any); a chain
    to a table outside the tightest target runs only when that table is at least `at_least`
    into its target (`pressing`)."""
    by_name = {t.name: t for t in tables}
    urgent = tightest(tables)
    in_front = _longest_chain(tables, expected_seconds)

    def behind_inputs(table: DerivedTable) -> list[DerivedTable]:
        """The derived tables upstream of `table` whose runs would bring it changes."""
        found = []
        for source in table.inputs:
            upstream = by_name.get(source.table.name)
            if upstream is None or upstream.name in held:
                continue
            further = behind_inputs(upstream)
            if further or standings[upstream.name].waiting:
                found += [*further, upstream]
        return found

    due = []
    for table in tables:
        standing = standings[table.name]
        if table.name in held or standing.behind is None or (only is not None and table.name not in only):
            continue
        if table.name not in urgent and standing.into_target(table) < at_least:
            continue
        upstream_runs = behind_inputs(table)
        if not (standing.waiting or upstream_runs):
            continue  # no run can make it fresher
        chain = [*upstream_runs, table]
        left = _room(table) - standing.behind
        if left <= sum(expected_seconds(t.name) for t in chain) + in_front:
            due.append((standing.into_target(table), chain))
    if not due:
        return []
    _, chain = max(due, key=lambda found: found[0])
    names = {t.name for t in chain}
    return [t for t in tables if t.name in names]  # pipeline order, each once


def tightest(tables: list[DerivedTable]) -> set[str]:
    """The tables with the tightest freshness target: the continuous loop keeps a slot, and
    the cores first, for the chain to them."""
    shortest = min(t.fresh_within for t in tables)
    return {t.name for t in tables if t.fresh_within == shortest}


def pressing(
    tables: list[DerivedTable], standings: dict[str, Standing], blocked: set[str] = frozenset()
) -> float:
    """How far into its target (`Standing.into_target`) the most overdue table with the
    tightest target is, when it is past that target and no quality gate blocks it or a
    table it reads (`blocked`: those would hold every other chain until the rows are fixed
    at the source); 0 otherwise. An input not landed yet holds nothing back: a table past
    its target has source changes on the way to it."""
    urgent = tightest(tables)
    return max(
        (
            standings[t.name].into_target(t)
            for t in tables
            if t.name in urgent
            and standings[t.name].into_target(t) > 1
            and not _upstream(t, tables) & blocked
        ),
        default=0.0,
    )


def seconds_until_due(
    tables: list[DerivedTable], standings: dict[str, Standing], expected_seconds: Callable[[str], float]
) -> float:
    """How long until some table could become due, were a change to land now: the least
    time any table has left before its target, less the runs of it and every derived table
    upstream of it, and the longest chain of runs that may be in front of them."""
    in_front = _longest_chain(tables, expected_seconds)
    return min(
        (
            _room(t)
            - (standings[t.name].behind or 0.0)
            - sum(expected_seconds(name) for name in _upstream(t, tables))
            - in_front
            for t in tables
        ),
        default=0.0,
    )


def _room(table: DerivedTable) -> float:
    """The seconds behind the source a table may fall before it is planned to have run."""
    return table.fresh_within.total_seconds() * (1 - PLANNING_MARGIN)


def downstream(tables: list[DerivedTable], names: set[str]) -> set[str]:
    """`names` and every derived table that reads one of them, directly or further down."""
    found = set(names)
    while readers := {
        t.name for t in tables if t.name not in found and any(i.table.name in found for i in t.inputs)
    }:
        found |= readers
    return found


def _upstream(table: DerivedTable, tables: list[DerivedTable]) -> set[str]:
    """The table and every derived table it reads, directly or further up."""
    found = {table.name}
    for source in table.inputs:
        upstream = next((t for t in tables if t.name == source.table.name), None)
        if upstream is not None:
            found |= _upstream(upstream, tables)
    return found


def _longest_chain(tables: list[DerivedTable], expected_seconds: Callable[[str], float]) -> float:
    """The longest a table's run, with the runs of every derived table upstream of it, is
    expected to take: the most the loop may be busy with when another table comes due."""
    return max((sum(expected_seconds(name) for name in _upstream(t, tables)) for t in tables), default=0.0)


def bronze_triggers(tables: list[DerivedTable], shortest: int) -> dict[str, int]:
    """How often continuous Bronze commits each Bronze table that a derived table reads, in
    seconds. The tables that reach the tightest target of all commit every `shortest` s (the
    trigger the user chose); a table whose every table downstream accepts more commits
    every `1 / BRONZE_BATCHES_PER_TARGET` of the tightest target among them, never more
    often than the others. Bronze's cost is per micro-batch, not per message, so a topic
    that feeds only tables with targets of minutes need not commit every few seconds."""
    by_name = {t.name: t for t in tables}

    def bronze_inputs(table: DerivedTable) -> set[str]:
        found = set()
        for source in table.inputs:
            name = source.table.name
            found |= bronze_inputs(by_name[name]) if name in by_name else {name}
        return found

    tightest: dict[str, float] = {}
    for table in tables:
        for name in bronze_inputs(table):
            tightest[name] = min(tightest.get(name, inf), table.fresh_within.total_seconds())
    urgent = min(tightest.values(), default=inf)
    return {
        name: shortest if target == urgent else max(shortest, int(target // BRONZE_BATCHES_PER_TARGET))
        for name, target in tightest.items()
    }
