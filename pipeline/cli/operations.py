"""Operating the tables: `lakehouse savepoint`, `maintain` and `erase`, each holding the
writer locks of the layers it rewrites."""

from __future__ import annotations

import json

from lakehouse.settings import ConfigurationError
from pipeline.cli.arguments import JSON_HELP, POSITIVE_INT


def savepoint(subcommands) -> None:
    savepoint = subcommands.add_parser(
        "savepoint", help="create, list, restore or delete Hudi savepoints of tables or layers"
    )
    savepoint.add_argument(
        "action",
        choices=["create", "list", "restore", "delete"],
        help="restore rolls the tables back to the savepoint; list needs no target",
    )
    savepoint.add_argument(
        "target", nargs="*", help="layers or tables, e.g. gold or silver.hudi_customer_profiles_silver"
    )
    savepoint.add_argument(
        "--instant", help="restore or delete this savepoint (restore: the latest by default)"
    )
    savepoint.add_argument("--comment", help="kept with a created savepoint")
    savepoint.set_defaults(handler=_savepoint, refuse=_flags_of_another_action)


def _flags_of_another_action(args) -> str | None:
    if args.instant is not None and args.action in ("create", "list"):
        return f"--instant names the savepoint to restore or delete; {args.action} takes none"
    if args.comment is not None and args.action != "create":
        return f"--comment is kept with a created savepoint; {args.action} takes none"
    return None


def _savepoint(args, settings):
    from lakehouse.locks import layer_writers
    from medallion.tables import main_tables, select, session
    from operations import savepoints

    tables = select(args.target, main_tables())
    if args.action != "list" and not args.target:
        raise ConfigurationError(
            f"name the tables or layers to {args.action}, e.g. `lakehouse savepoint {args.action} gold`"
        )
    with layer_writers(settings, [] if args.action == "list" else tables):
        spark = session(settings, "savepoint", one_shot=True)
        for line in savepoints.apply(spark, settings, args.action, tables, args.instant, args.comment or ""):
            print(line, flush=True)
    return 0


def maintain(subcommands) -> None:
    maintain = subcommands.add_parser(
        "maintain", help="run Hudi's table services now: compaction (Bronze), cleaning and archival"
    )
    maintain.add_argument(
        "--table", action="append", help="a layer or table (repeatable; default: every table)"
    )
    maintain.add_argument("--json", action="store_true", help=JSON_HELP)
    maintain.set_defaults(handler=_maintain)


def _maintain(args, settings):
    from lakehouse.locks import layer_writers
    from medallion.tables import declared_tables, select, session
    from operations import maintenance

    tables = select(args.table, declared_tables())
    with layer_writers(settings, tables):
        spark = session(settings, "maintain", one_shot=True)
        for table in maintenance.existing(spark, settings, tables):
            report = maintenance.maintain(spark, settings, table)
            print(json.dumps(report.as_dict()) if args.json else report.line(), flush=True)
    return 0


def erase(subcommands) -> None:
    erase = subcommands.add_parser(
        "erase",
        help="erase customers' personal data from the source, "
        "every layer and every file of the warehouse (GDPR)",
    )
    erase.add_argument(
        "--customer-id",
        type=POSITIVE_INT,
        action="append",
        required=True,
        help="the customer to erase (repeatable: one erasure rewrites the tables once for all of them)",
    )
    erase.set_defaults(handler=_erase)


def _erase(args, settings):
    from lakehouse.locks import layer_writers
    from medallion.tables import main_tables, session
    from operations import erasure

    with layer_writers(settings, main_tables()):
        report = erasure.erase(
            session(settings, "erase", one_shot=True), settings, "customer_id", args.customer_id
        )
    print("\n".join(report.lines()))
    return 0


SUBCOMMANDS = {"savepoint": savepoint, "maintain": maintain, "erase": erase}
