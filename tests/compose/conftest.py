"""The Compose group: the whole demo in containers (docker-compose.yml), as `make up` starts it
where a Docker engine answers, checked from outside as a user would.

The session's demo is its own: Compose project `retailmax-compose-test`, its volumes, a
state directory and warehouse under `.lake/compose-test/`, and ports 20,000 above the demo's
(the native test session takes 10,000), so it runs beside a demo and after the native
tests, never at once with them. It is started once (services, seed, workers), and torn down
with its volumes at the end.
"""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from infra.stack import isolated
from lakehouse import settings as settings_module
from lakehouse.settings import Settings

COMPOSE_PORT_OFFSET = 20_000


# After pytest-randomly's shuffle: the group's tests share one running demo, and the last two
# stop its workload and its pipeline, so they run in the order they are written.
@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    ours = [item for item in items if "compose" in item.nodeid.split("/")]
    items[:] = [item for item in items if item not in ours] + sorted(
        ours, key=lambda item: (str(item.reportinfo()[0]), item.reportinfo()[1] or 0)
    )


PROJECT = "retailmax-compose-test"


def compose_settings() -> Settings:
    """The group's settings: the demo's, moved to its own state directory, warehouse and ports."""
    base = settings_module.load()
    state_dir = (base.state_dir / "compose-test").resolve()
    warehouse = state_dir / "warehouse"
    return dataclasses.replace(
        isolated(base, state_dir, COMPOSE_PORT_OFFSET),
        warehouse=str(warehouse),
        checkpoints=str(warehouse / "_checkpoints"),
        quality_dir=state_dir / "quality",
        shuffle_partitions=2,
        spark_ui=False,
    )


@pytest.fixture(scope="session")
def settings():
    from infra import stack

    if not stack.docker_engine_answers():
        pytest.skip("no Docker engine answers here: `make test` installs and starts one (make docker)")
    with pytest.MonkeyPatch.context() as environment:
        environment.setenv("COMPOSE_PROJECT_NAME", PROJECT)
        yield compose_settings()


@pytest.fixture(scope="session")
def services(settings):
    """The demo in containers: services, the seed, and the workers (workload simulator,
    continuous pipeline, Data Docs) with the dashboard and metrics."""
    from infra import stack
    from ingestion.seed import SeedSize, seed
    from pipeline import demo

    stack.compose_down(settings, delete_volumes=True)  # what an interrupted session left
    shutil.rmtree(settings.state_dir, ignore_errors=True)
    stack.start(settings, "docker")
    try:
        seed(settings, SeedSize.for_lines(2_000))
        stack.start_demo_containers(settings)
        yield settings
    finally:
        demo.down(settings, report=lambda line: None, delete_volumes=True)
        shutil.rmtree(settings.state_dir, ignore_errors=True)


@pytest.fixture
def db(services):
    from ingestion import database

    with database.connect(services, autocommit=True) as conn:
        yield conn
