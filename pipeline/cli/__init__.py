"""`lakehouse`: the single entry point for every layer and the services under them.

The parser is built from the command groups (pipeline.py, services.py, analysts.py,
models.py, operations.py), each command a few lines over a function that lives with its feature;
main() turns what a command raises into a line on stderr and an exit status
(medallion/invocation.py)."""

from __future__ import annotations

import argparse
import atexit
import os
import re
import sys
from typing import NoReturn

from lakehouse import settings as settings_module
from lakehouse.settings import ConfigurationError
from medallion.invocation import (
    CONFIGURATION_ERROR,
    ERROR,
    EXIT_CONFIGURATION,
    EXIT_FAILURE,
    EXIT_QUALITY_GATE,
    EXIT_STATUSES,
    EXIT_WRITER_BUSY,
    QUALITY_GATE_FAILED,
)
from pipeline.cli import analysts, models, operations, pipeline, services

DESCRIPTION = "`lakehouse`: the single entry point for every layer and the services under them."
GROUPS = (services, pipeline, analysts, models, operations)
# The order `lakehouse --help` lists the subcommands in.
ORDER = (
    "services",
    "cluster",
    "up",
    "down",
    "status",
    "env",
    "seed",
    "simulate",
    "bronze",
    "silver",
    "gold",
    "run",
    "data-docs",
    "dashboard",
    "metrics",
    "supervise",
    "scheduler",
    "sql",
    "query",
    "history",
    "savepoint",
    "tables",
    "train",
    "models",
    "maintain",
    "erase",
    "tail",
)


EPILOG = "exit statuses:\n" + "\n".join(f"  {status}  {meaning}" for status, meaning in EXIT_STATUSES.items())


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Each argument's default after its help, unless there is none to show or the help
    says it in words; descriptions and the epilog keep their line breaks."""

    def _get_help_string(self, action):
        shown = action.help or ""
        if action.default not in (None, False, argparse.SUPPRESS) and "default" not in shown:
            shown += " (default: %(default)s)"
        return shown


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="lakehouse", description=DESCRIPTION, epilog=EPILOG, formatter_class=HelpFormatter
    )
    subcommands = root.add_subparsers(dest="command", required=True, metavar="<subcommand>")
    adders = {name: add for group in GROUPS for name, add in group.SUBCOMMANDS.items()}
    for _, add in sorted(adders.items(), key=lambda item: ORDER.index(item[0])):
        add(subcommands)
    summaries = {choice.dest: choice.help for choice in subcommands._choices_actions}
    for name, sub in subcommands.choices.items():
        sub.formatter_class = HelpFormatter
        sub.description = sub.description or summaries[name][0].upper() + summaries[name][1:] + "."
        sub.epilog = sub.epilog or EPILOG
    return root


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The arguments, or a usage error (exit status 2) for arguments that contradict each
    other: a subcommand's `refuse` names the contradiction, before any lock or JVM."""
    root = parser()
    args = root.parse_args(argv)
    if contradiction := getattr(args, "refuse", lambda _: None)(args):
        subcommands = next(a for a in root._actions if isinstance(a, argparse._SubParsersAction))
        subcommands.choices[args.command].error(contradiction)
    return args


def command() -> NoReturn:
    """The `lakehouse` executable: `main()`, and once it has returned, the process ends
    without tearing the interpreter down.

    Python ends as usual (threads joined, every other exit handler run) up to this one
    handler, registered first so that it runs last, which ends the process there. What it
    skips is freeing every object of every module one by one: with Great Expectations,
    pandas and PySpark loaded, that took 2.8 s of a core after every `lakehouse run` had
    written all it writes (CHANGELOG.md). An exception out of `main()` (a usage error, a
    traceback) ends the usual way."""
    status: int | None = None

    def end() -> None:
        if status is not None:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)

    atexit.register(end)
    status = main() or 0
    sys.exit(status)


def main(argv: list[str] | None = None) -> int:
    from lakehouse.locks import WriterBusy
    from lakehouse.rules import QualityGateFailed

    args = parse(argv)
    settings = None
    try:
        settings = settings_module.load()
        if getattr(args, "trigger_seconds", 0) is None:
            args.trigger_seconds = settings.bronze_trigger_seconds
        return args.handler(args, settings)
    except ConfigurationError as error:
        print(f"{CONFIGURATION_ERROR}{error}", file=sys.stderr)
        return EXIT_CONFIGURATION
    except QualityGateFailed as error:
        print(f"{QUALITY_GATE_FAILED}{error}", file=sys.stderr)
        return EXIT_QUALITY_GATE
    except WriterBusy as error:
        print(f"{ERROR}{error}", file=sys.stderr)
        return EXIT_WRITER_BUSY
    except RuntimeError as error:
        print(f"{ERROR}{error}", file=sys.stderr)
        return EXIT_FAILURE
    except Exception as error:
        unreachable = _unreachable_service(error, settings)
        if unreachable is None:
            raise
        print(f"{ERROR}{unreachable}", file=sys.stderr)
        return EXIT_CONFIGURATION if "password" in unreachable else EXIT_FAILURE


def _unreachable_service(error: Exception, settings) -> str | None:
    """One line for a service that is down or refuses our credentials, which would otherwise
    print a client library's traceback."""
    import psycopg
    from kafka.errors import KafkaTimeoutError

    if isinstance(error, psycopg.OperationalError):
        reason = str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__
        if "password authentication failed" in reason:
            from lakehouse.settings import PG_ROLES

            named = re.search(r'for user "([^"]+)"', reason)
            user = named[1] if named else settings.pg_user
            variable = next((r.password_variable for r in PG_ROLES if r.name == user), "PGPASSWORD")
            return (
                f"Postgres at {settings.pg_host}:{settings.pg_port} refused the password of "
                f"{user}: check {variable} in .env against the running database (`make "
                f"services` sets every role's password from .env)"
            )
        return (
            f"Postgres at {settings.pg_host}:{settings.pg_port} does not answer ({reason}); "
            f"start it with `make services`"
        )
    if isinstance(error, KafkaTimeoutError) and "bootstrap" in str(error):
        return f"Kafka at {settings.kafka_bootstrap} does not answer; start it with `make services`"
    return None
