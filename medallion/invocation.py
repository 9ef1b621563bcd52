"""How a `lakehouse` command is run and what it tells whoever ran it: its argv, its exit
statuses and the prefixes of its messages on stderr. The command (pipeline/cli) prints them;
the scheduler (orchestration/table_jobs.py), the fault matrix, the benchmarks and the tests run
it and read them."""

from __future__ import annotations

import sys

# Exit statuses a scheduler can act on: retrying helps after a failure (1: a service
# restarting) or a busy writer (4), never after a misconfiguration (2) or a fail-tier
# quality breach (3), which need a person.
EXIT_FAILURE, EXIT_CONFIGURATION, EXIT_QUALITY_GATE, EXIT_WRITER_BUSY = 1, 2, 3, 4
# What each means to whoever ran the command (`lakehouse --help` lists them).
EXIT_STATUSES = {
    0: "done",
    EXIT_FAILURE: "failed, e.g. a service is down or restarting; running it again may succeed",
    EXIT_CONFIGURATION: "misconfigured or misused: fix the setting or argument the message names",
    EXIT_QUALITY_GATE: "a fail-tier quality rule broke: nothing was committed; the message names the rule",
    EXIT_WRITER_BUSY: "another writer holds the table's lock; run it again once that one is done",
}

# The command's own messages on stderr start with one of these, after Spark's log lines.
ERROR, QUALITY_GATE_FAILED, CONFIGURATION_ERROR = (
    "error: ",
    "quality gate failed: ",
    "configuration error: ",
)
MESSAGE_PREFIXES = (ERROR, QUALITY_GATE_FAILED, CONFIGURATION_ERROR)


def lakehouse(*arguments: str) -> list[str]:
    """The argv of `lakehouse <arguments>`, run by this environment's Python."""
    return [sys.executable, "-m", "pipeline.cli", *arguments]
