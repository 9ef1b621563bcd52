"""The demo's workers: one that exits by itself is started again, with the error that stopped
it on record, until it keeps failing; one that `make down` stopped is left alone."""

import dataclasses
import sys
import threading
import time

import pytest

from infra import stack, workers
from lakehouse.settings import load

ERROR = "psycopg.errors.UniqueViolation: Key (product_id)=(256) already exists."
FAILING = [sys.executable, "-c", f"import sys; print('working'); sys.exit({ERROR!r})"]
QUIET = dict(report=lambda line: None)


@pytest.fixture
def demo(settings, tmp_path):
    return dataclasses.replace(settings, state_dir=tmp_path)


def _until_exited(process) -> None:
    deadline = time.monotonic() + 30
    while process.running():
        assert time.monotonic() < deadline, f"{process.name} still runs"
        time.sleep(0.05)


def _status(settings, name: str):
    return {s.name: s for s in workers.processes(settings)}[name]


def test_the_last_error_is_the_line_that_names_it():
    traceback = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "ingestion/workload.py", line 180, in new_product',
            ERROR,
            "DETAIL:  Key (product_id)=(256) already exists.",
        ]
    )
    assert workers.last_error(traceback) == ERROR
    assert workers.last_error("starting\nerror: Kafka does not answer at localhost:9092\n") == (
        "error: Kafka does not answer at localhost:9092"
    )
    assert workers.last_error("killed\n") == "killed"
    assert workers.last_error("") == "(nothing in its log)"


def test_a_worker_that_exits_is_started_again_until_it_keeps_failing(demo):
    process = workers.worker(demo, "simulator")
    process.start(FAILING)
    for exit_number in range(1, workers.RESTARTS_ALLOWED + 2):
        _until_exited(process)
        status = _status(demo, "simulator")
        assert not status.healthy and ERROR in status.detail, status.detail
        workers.supervise_once(demo, {"simulator": FAILING}, now=1_000.0 + exit_number, **QUIET)
        exits = workers.Exits.load(demo, "simulator")
        assert exits.last_error == ERROR
        assert exits.restarts == min(exit_number, workers.RESTARTS_ALLOWED)
    assert exits.gave_up
    assert _status(demo, "simulator").detail.startswith(f"left down after repeated exits: {ERROR}")
    # Left down: the supervisor no longer starts it.
    workers.supervise_once(demo, {"simulator": FAILING}, now=2_000.0, **QUIET)
    assert (
        not process.running() and workers.Exits.load(demo, "simulator").restarts == workers.RESTARTS_ALLOWED
    )


def test_exits_far_apart_never_add_up_to_giving_up(demo):
    process = workers.worker(demo, "pipeline")
    process.start(FAILING)
    for exit_number in range(2 * workers.RESTARTS_ALLOWED):
        _until_exited(process)
        workers.supervise_once(demo, {"pipeline": FAILING}, now=exit_number * workers.RESTART_WINDOW, **QUIET)
    assert not workers.Exits.load(demo, "pipeline").gave_up
    process.stop()


def test_a_running_worker_shows_its_pid_and_one_stopped_by_make_down_is_left_alone(demo):
    sleeping = [sys.executable, "-c", "import time; time.sleep(60)"]
    process = workers.worker(demo, "dashboard")
    process.start(sleeping)
    assert _status(demo, "dashboard").healthy and _status(demo, "dashboard").detail == f"pid {process.pid}"
    process.stop()
    workers.supervise_once(demo, {"dashboard": sleeping}, **QUIET)
    assert not process.running() and workers.processes(demo) == []


def test_a_worker_stopped_while_the_supervisor_watches_is_left_stopped(demo):
    # A worker that takes a second to end after SIGTERM, watched by a supervisor that looks
    # every few milliseconds meanwhile: it must never take the stop for an exit.
    lingering = [
        sys.executable,
        "-c",
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: (time.sleep(1), sys.exit(0)))\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)",
    ]
    process = workers.worker(demo, "simulator")
    process.start(lingering)
    while "ready" not in (process.log.read_text() if process.log.exists() else ""):
        time.sleep(0.01)
    stopping = threading.Thread(target=process.stop)
    stopping.start()
    deadline = time.monotonic() + 20
    while stopping.is_alive() and time.monotonic() < deadline:
        workers.supervise_once(demo, {"simulator": lingering}, **QUIET)
        time.sleep(0.005)
    restarted = workers.Exits.load(demo, "simulator").restarts
    if process.running():  # started again: not left to outlive the test
        process.kill()
    assert not stopping.is_alive(), "stop() did not return"
    assert restarted == 0 and not process.running()


def test_the_status_lines_of_services_workers_pages_and_streams_align():
    lines = [
        stack.ServiceStatus("spark ui 1", "http://localhost:4040/", True, "a Spark job").line(),
        stack.ServiceStatus("postgres", "localhost:5432", False).line(),
        stack.row("analyst", "", "JDBC sign-in", "user analyst, password x"),
    ]
    assert {line.index(address) for line, address in zip(lines, ("http", "localhost", "JDBC"))} == {20}
    assert stack.row("postgres", "stopped") == "postgres   stopped"
    names = [page.name for page in workers.pages(load())]
    assert len(set(names)) == len(names), names
