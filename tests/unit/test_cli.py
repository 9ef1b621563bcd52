"""The command line refuses misuse in one line, before it takes a lock or starts a JVM."""

from __future__ import annotations

import argparse
import subprocess

import pytest

from medallion.invocation import EXIT_CONFIGURATION, EXIT_FAILURE, EXIT_STATUSES, lakehouse
from pipeline import cli


@pytest.mark.parametrize(
    "argv, message",
    [
        (["seed", "--sales-lines", "0"], "argument --sales-lines: 0 is out of range: must be more than 0"),
        (["seed", "--customers", "-5"], "argument --customers: -5 is out of range: must be more than 0"),
        (["seed", "--sales-lines", "7.9"], "argument --sales-lines: invalid int value: '7.9'"),
        (["simulate", "--rate", "-1"], "argument --rate: -1 is out of range: must be at least 0"),
        (
            ["simulate", "--bad-rows", "1.5"],
            "argument --bad-rows: 1.5 is out of range: a share is between 0 and 1",
        ),
        (["run", "--interval", "0"], "argument --interval: 0 is out of range: must be more than 0"),
        (["erase", "--customer-id", "-3"], "argument --customer-id: -3 is out of range: must be more than 0"),
        (["tail", "sales", "--timeout", "0"], "argument --timeout: 0 is out of range: must be more than 0"),
        (["seed", "--day", "28/11/2026"], "argument --day: 28/11/2026 is not a day: write it YYYY-MM-DD"),
        (
            ["seed", "--day", "2999-01-01"],
            "argument --day: 2999-01-01 is in the future: its history would end after today, "
            "and the quality gates keep out sales from the future",
        ),
    ],
)
def test_out_of_range_numbers_are_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.parser().parse_args(argv)
    assert exited.value.code == EXIT_CONFIGURATION
    assert capsys.readouterr().err.splitlines()[-1].endswith(message)


def test_an_unknown_bronze_table_is_refused_before_the_writer_lock(monkeypatch, capsys):
    def no_lock(*_):
        raise AssertionError("the writer lock was taken")

    monkeypatch.setattr("lakehouse.locks.exclusive_writer", no_lock)
    assert cli.main(["bronze", "--table", "nope"]) == EXIT_CONFIGURATION
    assert capsys.readouterr().err.splitlines() == [
        "configuration error: no Bronze table 'nope'; known: hudi_customer_master_bronze, "
        "hudi_product_catalog_bronze, hudi_sales_transactions_bronze, hudi_web_clickstreams_bronze, "
        "hudi_inventory_updates_bronze (or their topics)"
    ]


def test_a_service_that_does_not_answer_is_named_in_one_line(monkeypatch, capsys):
    monkeypatch.setenv("PGPORT", "9")
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "localhost:9")
    assert cli.main(["seed"]) == EXIT_FAILURE
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: Postgres at localhost:9 does not answer (") and line.endswith(
        "); start it with `make services`"
    ), line

    assert cli.main(["tail", "retailmax.retail.sales_transactions", "--timeout", "1"]) == EXIT_FAILURE
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: Kafka at localhost:9 does not answer; start it with `make services`"
    ]


def test_each_command_is_in_one_group_and_listed_once_in_the_help():
    names = [name for group in cli.GROUPS for name in group.SUBCOMMANDS]
    assert sorted(names) == sorted(cli.ORDER) and len(set(names)) == len(names)
    subcommands = next(a for a in cli.parser()._actions if a.dest == "command").choices
    assert list(subcommands) == list(cli.ORDER)


def test_the_command_others_start_is_this_one(monkeypatch):
    """What the scheduler, the demo and the tests start (medallion/invocation.py) is this
    parser's `lakehouse`, named so in its usage lines."""
    monkeypatch.setenv("COLUMNS", "100")
    shown = subprocess.run(lakehouse("--help"), capture_output=True, text=True, check=True)
    assert shown.stdout == cli.parser().format_help()
    assert shown.stdout.startswith("usage: lakehouse [-h]")


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    root = cli.parser()
    return next(a for a in root._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_every_subcommand_describes_itself_and_every_argument_and_its_default():
    undocumented = [
        f"{name} {action.option_strings or action.dest}"
        for name, sub in _subcommands().items()
        for action in sub._actions
        if not action.help
    ]
    assert undocumented == []
    assert [name for name, sub in _subcommands().items() if not sub.description] == []

    run_help = _subcommands()["run"].format_help()
    assert "(default: 10)" in " ".join(run_help.split())
    assert "(default: 10000)" in " ".join(_subcommands()["seed"].format_help().split())
    assert "(default: None)" not in " ".join(run_help.split())


def test_the_help_lists_the_exit_statuses():
    shown = cli.parser().format_help()
    for status, meaning in EXIT_STATUSES.items():
        assert f"  {status}  {meaning}" in shown


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["run", "--full-refresh", "--continuous"],
            "--full-refresh and --continuous contradict each other: rebuild once with "
            "`lakehouse run --full-refresh`, then keep going with `lakehouse run --continuous`",
        ),
        (["run", "--interval", "5"], "--interval applies only with --continuous"),
        (
            ["run", "--trigger-seconds", "3", "--interval", "5"],
            "--trigger-seconds and --interval apply only with --continuous",
        ),
        (["bronze", "--trigger-seconds", "3"], "--trigger-seconds applies only with --continuous"),
        (
            ["savepoint", "create", "gold", "--instant", "20261128"],
            "--instant names the savepoint to restore or delete; create takes none",
        ),
        (
            ["savepoint", "restore", "gold", "--comment", "x"],
            "--comment is kept with a created savepoint; restore takes none",
        ),
    ],
)
def test_contradicting_flags_are_refused_with_what_to_do(argv, message, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.parse(argv)
    assert exited.value.code == EXIT_CONFIGURATION
    assert capsys.readouterr().err.splitlines()[-1] == f"lakehouse {argv[0]}: error: {message}"


def test_the_supervisor_watches_every_worker_unless_named_and_refuses_an_unknown_one(capsys):
    assert cli.parse(["supervise"]).workers == []
    assert cli.parse(["supervise", "--start", "simulator", "pipeline"]).workers == ["simulator", "pipeline"]
    with pytest.raises(SystemExit):
        cli.parse(["supervise", "nope"])
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .startswith("lakehouse supervise: error: no worker nope; the supervisor watches simulator, pipeline")
    )


def test_flags_that_agree_are_taken():
    assert cli.parse(["run", "--continuous", "--interval", "5", "--trigger-seconds", "3"]).interval == 5
    assert cli.parse(["savepoint", "restore", "gold", "--instant", "20261128"]).instant == "20261128"
