import dataclasses
import os
import secrets
import shutil
import tempfile
from pathlib import Path

import pytest

from infra.stack import isolated
from lakehouse import settings as settings_module

# Before any test module imports it: its helpers' assertions then show their values on failure.
pytest.register_assert_rewrite("tests.support")


def _runs_integration_tests(session: pytest.Session) -> bool:
    return any(item.get_closest_marker("integration") for item in session.items)


# A test session's services listen this far above the demo's ports: a running demo keeps
# its own Postgres, Kafka, Connect and JDBC server, and never sees the tests' rows.
TEST_PORT_OFFSET = 10_000


@pytest.fixture(scope="session", autouse=True)
def project_secrets():
    """The project's secrets in this process's environment, where the `lakehouse` commands
    the tests start find them too (`tests.support.cli_env` passes it on): each one the
    environment lacks gets a random value for the session, in memory. The services a session
    starts are its own, set up with these, so the demo's `.env` is neither read nor written."""
    with pytest.MonkeyPatch.context() as environment:
        for name in settings_module.SECRET_VARIABLES:
            if name not in os.environ:
                environment.setenv(name, secrets.token_urlsafe(18))
        yield


@pytest.fixture(scope="session")
def settings(tmp_path_factory, request):
    """The project's settings for a session of its own: its state directory (services' data,
    logs, models) and ports, and a warehouse of its own. With integration tests, the catalog
    is the shared metastore in the session's own Postgres; unit tests alone keep it in the
    Spark process."""
    # Readable by all, as the demo's is, for the JDBC server's OS account
    # (infra/native/thrift.py): pytest's temporary directories are their owner's only.
    warehouse = Path(tempfile.mkdtemp(prefix="retailmax-test-warehouse-"))
    warehouse.chmod(0o755)
    base = settings_module.load()
    integration = _runs_integration_tests(request.session)
    yield dataclasses.replace(
        isolated(base, (base.state_dir / "test-session").resolve(), TEST_PORT_OFFSET),
        warehouse=str(warehouse),
        quality_dir=tmp_path_factory.mktemp("quality"),
        checkpoints=str(warehouse / "_checkpoints"),
        shuffle_partitions=2,
        spark_ui=False,
        compact_every_delta_commits=3,
        metastore_database=base.metastore_database if integration else "",
        thrift_memory="1g",
    )
    shutil.rmtree(warehouse, ignore_errors=True)


@pytest.fixture(scope="session")
def services(settings):
    """The session's own services: the native stack, started under the session's state
    directory on its own ports, seeded, and stopped at the end. A stack an interrupted
    session left there is stopped first (it is no one else's) and its state deleted, since
    its passwords were that session's."""
    from infra import stack
    from ingestion.seed import SeedSize, seed

    stack.stop(settings, report=lambda line: None)
    shutil.rmtree(settings.state_dir, ignore_errors=True)
    stack.start(settings, "native")
    try:
        seed(settings, SeedSize.for_lines(2_000))
        _seed_events(settings)
        yield settings
    finally:
        stack.stop(settings)


@pytest.fixture(scope="session")
def spark(settings, request):
    """One SparkSession for the whole test session."""
    from lakehouse import spark as spark_module

    if settings.metastore_database:
        request.getfixturevalue("services")
    session = spark_module.session(settings, "tests")
    yield session
    session.stop()


def _seed_events(settings, count: int = 300) -> None:
    """Clickstream and inventory events on top of the seeded source, as `make up` sends them,
    so that every module finds every Bronze table with data whatever runs before it."""
    from kafka import KafkaProducer

    from ingestion import database
    from ingestion.events import EventStreams

    with database.connect(settings) as db:
        customer_ids = [row[0] for row in db.execute("SELECT customer_id FROM retail.customer_master")]
        products = db.execute("SELECT product_id, sku FROM retail.product_catalog").fetchall()
    producer = KafkaProducer(bootstrap_servers=settings.kafka_bootstrap)
    streams = EventStreams(
        producer, 5, customer_ids, [sku for _, sku in products], [product_id for product_id, _ in products]
    )
    for _ in range(count):
        streams.step()
    producer.flush()
    producer.close()
