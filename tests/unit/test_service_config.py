"""The Docker Compose file, the native configs and the connector JSON stay in step."""

import re
import subprocess
import uuid
from pathlib import Path

import yaml

from infra.native import kafka
from ingestion.connector import connector_definition
from ingestion.database import SCHEMA_FILE, SOURCE_TABLES

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
CONFIG = connector_definition()["config"]


def test_every_compose_service_runs_the_image_built_from_the_repository_on_the_debian_base():
    services = COMPOSE["services"]
    assert {service["image"] for service in services.values()} == {"retailmax:local"}
    (built,) = [service["build"] for service in services.values() if "build" in service]
    dockerfile = (ROOT / built["dockerfile"]).read_text()
    assert built["args"] == {"BASE_IMAGE": "${BASE_IMAGE:-debian:bookworm-slim}"}
    assert re.findall(r"^FROM .*", dockerfile, re.M) == ["FROM ${BASE_IMAGE}"]
    assert "ARG BASE_IMAGE=debian:bookworm-slim" in dockerfile
    # Pinned nowhere but infra/versions.env and pyproject.toml: the jars come through the
    # native mode's fetchers, the Python packages from the project's pins, the system
    # packages from the base's Debian release.
    assert not re.search(r"\d+\.\d+\.\d+|==", dockerfile)
    assert ".env" in (ROOT / ".dockerignore").read_text().split()


def test_every_compose_service_has_a_health_check_and_the_hosts_network_as_natively():
    for name, service in COMPOSE["services"].items():
        assert "healthcheck" in service, name
        assert service["network_mode"] == "host", name
        assert "ports" not in service, name
    assert set(COMPOSE["volumes"]) == {"postgres-data", "kafka-data", "cluster-data"}


def test_compose_runs_each_service_with_the_native_modes_code_and_settings():
    from infra.native import cluster
    from infra.native.services import native_services
    from infra.workers import COMPOSE_SERVICES, WORKERS
    from lakehouse.settings import SECRET_VARIABLES, load
    from medallion.invocation import lakehouse

    settings = load()
    services = COMPOSE["services"]
    native = {s.name for s in (*native_services(settings), *cluster.daemons(settings))}
    assert native <= set(services)
    for name in native:
        assert services[name]["command"] == ["python", "-m", "infra.serve", name]
    profiled = {name for name, service in services.items() if service.get("profiles") == ["cluster"]}
    assert profiled == {d.name for d in cluster.daemons(settings)}

    # The image's Python runs the `lakehouse` command as everything else here runs it, and
    # the workers Compose runs with the arguments the native mode gives them.
    def in_image(*arguments: str) -> list[str]:
        return ["python", *lakehouse(*arguments)[1:]]

    assert COMPOSE_SERVICES <= set(services)
    for name in COMPOSE_SERVICES:
        assert services[name]["command"] == in_image(*WORKERS[name])
    # The other workers run in one container, started and watched by the native supervisor.
    others = [name for name in WORKERS if name != "supervisor" and name not in COMPOSE_SERVICES]
    assert services["workers"]["command"] == in_image("supervise", "--start", *others)
    assert {services[name]["profiles"][0] for name in (*COMPOSE_SERVICES, "workers")} == {"demo"}
    assert services["scheduler"]["command"] == in_image("scheduler", "webserver")
    assert services["scheduler-daemon"]["command"] == in_image("scheduler", "daemon")
    assert {services[name]["profiles"][0] for name in ("scheduler", "scheduler-daemon")} == {"scheduler"}
    # DAGSTER_HOME is read by Dagster itself (the daemon's health check), not by the settings.
    # HOME: any user's, for the workers' container, which runs as the host's user.
    known = set(settings.environment()) | set(SECRET_VARIABLES) | {"DAGSTER_HOME", "HOME"}
    for name, service in services.items():
        assert set(service["environment"]) <= known, name


def test_compose_services_run_as_the_native_modes_accounts_and_the_jdbc_server_only_reads():
    from lakehouse.settings import Settings

    services = COMPOSE["services"]
    assert all(service.get("user") != "root" for service in services.values())
    assert services["postgres"]["user"] == "postgres"
    thrift = services["thrift"]
    assert thrift["user"] == Settings.thrift_os_user
    assert f"{Settings.thrift_os_user} " in (ROOT / "infra/docker/Dockerfile").read_text()
    assert all(volume.endswith(":ro") for volume in thrift["volumes"])


def test_connect_provides_every_variable_the_connector_refers_to():
    from infra.native.kafka import NativeConnect
    from lakehouse.settings import load

    referenced = set(re.findall(r"\$\{env:(\w+)\}", str(CONFIG)))
    assert referenced == {"SOURCE_DB_HOST", "SOURCE_DB_PORT", "DEBEZIUM_PASSWORD"}
    # One code gives them to the worker in both modes (infra/serve.py runs the same class).
    assert referenced <= set(NativeConnect(load()).environment())
    assert "DEBEZIUM_PASSWORD" in COMPOSE["services"]["connect"]["environment"]


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


def test_a_change_event_the_connectors_guard_lets_through_fits_every_limit_on_its_way():
    guard = int(connector_definition()["config"]["transforms.guard.max.bytes"])
    connect, broker = _properties("connect-distributed.properties"), _properties("kafka-server.properties")
    request = int(connect["producer.max.request.size"])
    # The producer adds a record batch's own bytes (about 100) to the event's key and value.
    assert guard + 4096 <= request <= int(connect["producer.buffer.memory"])
    assert request <= int(broker["message.max.bytes"]) <= int(broker["replica.fetch.max.bytes"])
    assert connector_definition()["config"]["transforms"].split(",")[-1] == "guard"


def test_every_connect_plugin_class_of_ours_is_named_in_its_serviceloader_manifest():
    """Connect finds plugins from their manifests alone (`plugin.discovery=service_load`):
    a plugin class missing from one would be unknown to the worker, and the connector that
    names it refused."""
    assert _properties("connect-distributed.properties")["plugin.discovery"] == "service_load"
    plugins = ROOT / "ingestion" / "jvm"
    package = re.compile(r"^package ([\w.]+);", re.M)
    declared = {
        f"{package.search(source.read_text())[1]}.{source.stem}"
        for source in plugins.rglob("*.java")
        if re.search(r"\bimplements Transformation<", source.read_text())
    }
    manifest = plugins / "META-INF/services/org.apache.kafka.connect.transforms.Transformation"
    assert declared and set(manifest.read_text().split()) == declared


def test_the_services_and_cluster_of_a_test_session_and_of_the_benchmark_share_no_port_with_the_demos(
    tmp_path,
):
    from benchmarks.run import SOURCE_PORT_OFFSET
    from infra.native.cluster import daemons
    from infra.native.services import native_services
    from infra.stack import isolated
    from lakehouse.settings import load
    from tests.conftest import TEST_PORT_OFFSET

    def ports(settings):
        services = [*native_services(settings), *daemons(settings)]
        return {port for service in services for _, port, _ in service.ports()}

    demo = load()
    session = ports(isolated(demo, tmp_path / "tests", TEST_PORT_OFFSET))
    benchmark = ports(isolated(demo, tmp_path / "bench", SOURCE_PORT_OFFSET))
    assert ports(demo) and session and benchmark
    assert ports(demo).isdisjoint(session | benchmark)
    assert session.isdisjoint(benchmark)
