"""The Docker Compose file, the native configs and the connector JSON stay in step."""

import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
import yaml

from infra.native import kafka
from ingestion.connector import connector_definition
from ingestion.database import SCHEMA_FILE, SOURCE_TABLES
from lakehouse.settings import read_versions

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
CONFIG = connector_definition()["config"]


def test_compose_images_are_the_pinned_versions():
    versions = read_versions()
    services = COMPOSE["services"]
    assert services["postgres"]["image"].startswith("${POSTGRES_IMAGE")
    assert services["kafka"]["image"].startswith("${KAFKA_IMAGE")
    assert services["connect"]["image"].startswith("${DEBEZIUM_CONNECT_IMAGE")
    assert versions["KAFKA_IMAGE"].endswith(":" + versions["KAFKA_VERSION"])
    assert versions["DEBEZIUM_CONNECT_IMAGE"].endswith(":" + versions["DEBEZIUM_VERSION"])


def test_compose_publishes_the_native_ports_on_loopback_only():
    ports = {name: svc["ports"][0] for name, svc in COMPOSE["services"].items() if "ports" in svc}
    assert ports == {
        "postgres": "127.0.0.1:5432:5432",
        "kafka": "127.0.0.1:9092:9092",
        "connect": "127.0.0.1:8083:8083",
        "thrift": "127.0.0.1:${THRIFT_PORT:-10000}:10000",
    }
    native = (ROOT / "infra/config/kafka-server.properties").read_text()
    assert "controller.quorum.voters=1@localhost:${controller_port}" in native


def test_every_service_has_a_health_check_and_state_on_named_volumes():
    for name, service in COMPOSE["services"].items():
        assert "healthcheck" in service, name
    assert set(COMPOSE["volumes"]) == {"postgres-data", "kafka-data", "minio-data"}


def test_the_compose_cluster_runs_the_native_clusters_daemons_and_an_s3_store():
    from infra.native.cluster import daemons
    from lakehouse.settings import load

    services = COMPOSE["services"]
    profiled = {name for name, service in services.items() if service.get("profiles") == ["cluster"]}
    assert profiled == {"spark-master", "spark-worker-1", "spark-worker-2", "minio"}
    spark = {name: services[name]["command"] for name in profiled - {"minio"}}
    assert spark == {name: ["python", "-m", "infra.native.cluster", name] for name in spark}
    assert set(spark) <= {daemon.name for daemon in daemons(load())}
    from lakehouse.settings import SECRET_VARIABLES

    known = set(load().environment()) | set(SECRET_VARIABLES)
    assert all(set(services[name]["environment"]) <= known for name in spark)
    assert services["minio"]["image"].startswith("${MINIO_IMAGE")
    assert "local/retailmax" in services["minio"]["command"][0]


def test_the_project_image_runs_the_native_mode_commands_on_the_settings_they_read():
    services = COMPOSE["services"]
    commands = {
        name: services[name]["command"]
        for name in ("thrift", "dashboard", "metrics", "scheduler", "scheduler-daemon")
    }
    from infra.workers import COMPOSE_SERVICES, WORKERS
    from pipeline.commands import lakehouse

    # The image's Python runs the `lakehouse` command as everything else here runs it, and
    # the workers Compose runs with the arguments native mode gives them.
    def in_image(*arguments: str) -> list[str]:
        return ["python", *lakehouse(*arguments)[1:]]

    assert commands == {
        "thrift": ["python", "-m", "serving.jdbc"],
        "dashboard": in_image(*WORKERS["dashboard"]),
        "metrics": in_image(*WORKERS["metrics"]),
        "scheduler": in_image("scheduler", "webserver"),
        "scheduler-daemon": in_image("scheduler", "daemon"),
    }
    assert {services[name]["image"] for name in commands} == {"retailmax-lakehouse:local"}
    assert (ROOT / services["thrift"]["build"]["dockerfile"]).exists()
    from lakehouse.settings import SECRET_VARIABLES, load

    assert COMPOSE_SERVICES <= set(services)
    # DAGSTER_HOME is read by Dagster itself (the daemon's health check), not by the settings.
    known = set(load().environment()) | set(SECRET_VARIABLES) | {"DAGSTER_HOME"}
    for name in commands:
        assert set(services[name]["environment"]) <= known, name


def test_the_jdbc_server_in_compose_runs_as_the_native_modes_account_and_only_reads():
    thrift = COMPOSE["services"]["thrift"]
    from lakehouse.settings import Settings

    assert thrift["user"] == Settings.thrift_os_user
    assert (
        f"useradd --system --user-group --no-create-home --shell /usr/sbin/nologin "
        f"{Settings.thrift_os_user}" in (ROOT / thrift["build"]["dockerfile"]).read_text()
    )
    assert all(volume.endswith(":ro") for volume in thrift["volumes"])


def test_connect_provides_every_variable_the_connector_refers_to():
    referenced = set(re.findall(r"\$\{env:(\w+)\}", str(CONFIG)))
    assert referenced == {"SOURCE_DB_HOST", "SOURCE_DB_PORT", "DEBEZIUM_PASSWORD"}
    assert referenced <= set(COMPOSE["services"]["connect"]["environment"])
    native = (ROOT / "infra/native/kafka.py").read_text()
    assert all(f'"{name}"' in native for name in referenced)


def test_compose_file_is_valid_for_docker_compose_when_available():
    from lakehouse.settings import SECRET_VARIABLES

    if (
        shutil.which("docker") is None
        or subprocess.run(["docker", "compose", "version"], capture_output=True).returncode
    ):
        pytest.skip("no `docker compose` on this machine: the YAML checks above still ran")
    result = subprocess.run(
        [
            "docker",
            "compose",
            "-f",
            str(ROOT / "docker-compose.yml"),
            "--env-file",
            str(ROOT / "infra/versions.env"),
            "config",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env={
            "PATH": "/usr/bin:/bin",
            **{name: "secret" for name in SECRET_VARIABLES},
            "LAKEHOUSE_WAREHOUSE": "/tmp/warehouse",
        },
    )
    assert result.returncode == 0, result.stderr


def test_connector_captures_the_source_tables_deliberately():
    assert CONFIG["topic.prefix"] == "retailmax"
    assert CONFIG["table.include.list"].split(",") == [f"retail.{t}" for t in SOURCE_TABLES]
    assert CONFIG["decimal.handling.mode"] == "string"
    assert CONFIG["tombstones.on.delete"] == "false"
    assert CONFIG["publication.autocreate.mode"] == "disabled"
    schema = SCHEMA_FILE.read_text()
    assert f"CREATE PUBLICATION {CONFIG['publication.name']}" in schema
    for table in SOURCE_TABLES:
        assert f"ALTER TABLE retail.{table:<18} REPLICA IDENTITY FULL" in schema


def test_make_help_lists_every_target():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z-]+):", makefile, re.M))
    listed = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "help"], capture_output=True, text=True, check=True
    ).stdout
    assert targets == set(re.findall(r"^\s+make (\S+)", listed, re.M))


def test_a_cluster_id_never_starts_with_a_dash(monkeypatch):
    # 0xF8 encodes to "-" in URL-safe base64: the first draw must be refused.
    draws = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x07" + bytes(15))])
    monkeypatch.setattr(kafka.uuid, "uuid4", lambda: next(draws))
    cluster_id = kafka._random_cluster_id()
    assert cluster_id == "BwAAAAAAAAAAAAAAAAAAAA"
    assert len(cluster_id) == 22


def _properties(name: str) -> dict[str, str]:
    lines = (ROOT / "infra/config" / name).read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_compose_kafka_has_every_native_broker_setting():
    # Listeners and paths differ by design (containers reach the broker by service name).
    native = {
        k: v
        for k, v in _properties("kafka-server.properties").items()
        if "${" not in v and "listener" not in k
    }
    environment = COMPOSE["services"]["kafka"]["environment"]
    compose = {
        k.removeprefix("KAFKA_").lower().replace("_", "."): str(v)
        for k, v in environment.items()
        if k.startswith("KAFKA_")
    }
    assert {k: compose.get(k) for k in native} == native
    assert native["min.insync.replicas"] == "1" and native["unclean.leader.election.enable"] == "false"


def test_compose_connect_has_the_native_offset_and_producer_settings():
    native = _properties("connect-distributed.properties")
    environment = COMPOSE["services"]["connect"]["environment"]
    for key in (
        "offset.flush.interval.ms",
        "producer.acks",
        "producer.max.request.size",
        "producer.buffer.memory",
    ):
        assert str(environment["CONNECT_" + key.upper().replace(".", "_")]) == native[key], key


def test_compose_postgres_runs_with_the_native_server_options():
    from infra.native.postgres import SERVER_OPTIONS

    command = COMPOSE["services"]["postgres"]["command"]
    options = dict(value.split("=", 1) for flag, value in zip(command, command[1:]) if flag == "-c")
    assert {k: SERVER_OPTIONS[k] for k in options} == options
    assert options["max_slot_wal_keep_size"] == "4GB"


def test_a_change_event_the_connectors_guard_lets_through_fits_every_limit_on_its_way():
    guard = int(connector_definition()["config"]["transforms.guard.max.bytes"])
    connect, broker = _properties("connect-distributed.properties"), _properties("kafka-server.properties")
    request = int(connect["producer.max.request.size"])
    # The producer adds a record batch's own bytes (about 100) to the event's key and value.
    assert guard + 4096 <= request <= int(connect["producer.buffer.memory"])
    assert request <= int(broker["message.max.bytes"]) <= int(broker["replica.fetch.max.bytes"])
    assert connector_definition()["config"]["transforms"].split(",")[-1] == "guard"


def test_a_test_sessions_services_and_cluster_listen_on_no_port_the_demos_do(tmp_path):
    from infra.native.cluster import daemons
    from infra.stack import _native_services
    from lakehouse.settings import load
    from tests.conftest import isolated

    def ports(settings):
        services = [*_native_services(settings), *daemons(settings)]
        return {port for service in services for _, port, _ in service.ports()}

    demo = load()
    session = isolated(demo, tmp_path)
    assert ports(demo) and ports(session)
    assert ports(demo).isdisjoint(ports(session))
