import dataclasses
import os
import secrets
import shutil
import tempfile
from pathlib import Path

import pytest

from lakehouse import settings as settings_module

# Before any test module imports it: its helpers' assertions then show their values on failure.
pytest.register_assert_rewrite("tests.support")


def _runs_integration_tests(session: pytest.Session) -> bool:
    return any(item.get_closest_marker("integration") for item in session.items)


@pytest.fixture(scope="session", autouse=True)
def project_secrets(request):
    """The project's secrets in this process's environment, where the `lakehouse` commands
    the tests start find them too (`tests.support.cli_env` passes it on).

    With integration tests, the demo's, from `./.env`, which is written first as `make env`
    writes it when it lacks a secret: the services a session reuses or starts are the
    demo's, and they keep the passwords they were set up with (a running stack; the native
    Postgres cluster under the state directory, whose owner's password `initdb` takes once;
    Docker Compose, which reads `.env` itself), so other secrets would lock the tests out
    of them, or the demo out of what the tests set up.

    Unit tests alone reach no service: each secret the environment lacks gets a random value
    for the session, in memory, and the repository is left as it was."""
    if _runs_integration_tests(request.session):
        settings_module.write_env_file()
        settings_module.load_env_file()
        yield
        return
    with pytest.MonkeyPatch.context() as environment:
        for name in settings_module.SECRET_VARIABLES:
            if name not in os.environ:
                environment.setenv(name, secrets.token_urlsafe(18))
        yield


@pytest.fixture(scope="session")
def settings(tmp_path_factory, request):
    """The project's settings, with a warehouse of the test session's own. With integration
    tests, also a metastore database and a JDBC server port of its own, so that a running
    demo keeps its catalog; unit tests alone keep the catalog in the Spark process."""
    # Readable by all, as the demo's is, for the JDBC server's OS account
    # (infra/native/thrift.py): pytest's temporary directories are their owner's only.
    warehouse = Path(tempfile.mkdtemp(prefix="retailmax-test-warehouse-"))
    warehouse.chmod(0o755)
    base = settings_module.load()
    integration = _runs_integration_tests(request.session)
    yield dataclasses.replace(
        base,
        warehouse=str(warehouse),
        quality_dir=tmp_path_factory.mktemp("quality"),
        checkpoints=str(warehouse / "_checkpoints"),
        shuffle_partitions=2,
        spark_ui=False,
        compact_every_delta_commits=3,
        metastore_database="metastore_tests" if integration else "",
        thrift_port=base.thrift_port + 1,
        thrift_memory="1g",
    )
    shutil.rmtree(warehouse, ignore_errors=True)


@pytest.fixture(scope="session")
def services(settings):
    """The real services: a running stack is reused, otherwise the native one is started
    for the session and stopped at its end."""
    from bronze.tables import personal_columns
    from infra import metastore, stack
    from ingestion import database
    from ingestion.seed import SeedSize, seed

    already_up = all(s.healthy for s in stack.status(settings))
    if already_up:
        database.apply_schema(settings, personal_columns())
        metastore.ensure(settings)
    else:
        stack.start(settings, "native")
    seed(settings, SeedSize.for_lines(2_000))
    _seed_events(settings)
    yield settings
    if not already_up:
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
