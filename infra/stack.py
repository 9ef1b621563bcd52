"""The service stack, one interface over two modes.

Docker Compose is used when a Docker engine answers; otherwise the same topology runs as
native processes (infra/native). The mode chosen by `up` is remembered under `.lake/run`
so that `down` stops exactly what `up` started.
"""

# Why one module: every function here answers one question in both modes (start, stop,
# status, one service, a profile), and the choice between them is the mode file it keeps;
# split by mode, each caller would make that choice again. `isolated` is here as the one
# place that says where a second stack (a test session's, a benchmark's) lives.

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from bronze.tables import personal_columns
from infra import metastore
from infra.native import cluster
from infra.native.process import ServiceError
from infra.native.services import native_services
from ingestion import connector, database, topics
from lakehouse.network import port_open
from lakehouse.settings import PORT, Settings, declared

ROOT = Path(__file__).resolve().parent.parent
HOST_CERTIFICATE_AUTHORITIES = Path("/usr/local/share/ca-certificates")
COMPOSE = ["docker", "compose", "-f", str(ROOT / "docker-compose.yml")]
# The label of the project's image (infra/docker/Dockerfile): unnamed images that carry it
# are earlier builds, replaced.
IMAGE_LABEL = "org.opencontainers.image.title=retailmax"


@dataclass(frozen=True)
class ServiceStatus:
    name: str
    address: str
    healthy: bool
    detail: str = ""

    def line(self) -> str:
        return row(self.name, "healthy" if self.healthy else "DOWN", self.address, self.detail)


# The columns of every line the services, the demo and `lakehouse status` print, so they
# align with each other: a name, a state, an address, then free text.
COLUMNS = (10, 8, 30)


def row(*cells: str) -> str:
    """One line of that table: each cell padded to its column, the last as it is."""
    padded = [f"{cell:<{width}}" for cell, width in zip(cells[:-1], COLUMNS, strict=False)]
    return " ".join([*padded, cells[-1]]).rstrip()


def docker_engine_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=10).returncode == 0
    except subprocess.TimeoutExpired:
        return False


# What each container sets for itself (docker-compose.yml, infra/docker/Dockerfile) rather
# than taking from the command that starts it.
CONTAINER_SETTINGS = ("LAKEHOUSE_JARS_DIR", "SPARK_IVY_DIR")


def _compose(settings: Settings, *arguments: str) -> None:
    # The pins, then the secrets of .env where there is one (a test session keeps its own in
    # its environment, which takes precedence).
    env_files = [ROOT / "infra" / "versions.env"]
    if (ROOT / ".env").exists():
        env_files.append(ROOT / ".env")
    subprocess.run(
        [*COMPOSE, *(f"--env-file={path}" for path in env_files), *arguments],
        check=True,
        env={**os.environ, **compose_variables(settings)},
    )


def compose_variables(settings: Settings) -> dict[str, str]:
    """What `docker compose` needs besides the secrets (from the environment or .env): the
    containers' settings, written to <state dir>/run/compose.env for them to read; the
    warehouse and state directory, mounted at the host's paths; this process's user, as
    whom the demo's workers run. And the classic builder: Debian's engine has BuildKit, but
    not the buildx plugin that Compose's BuildKit path wants."""
    written = settings.state_dir / "run" / "compose.env"
    written.parent.mkdir(parents=True, exist_ok=True)
    written.write_text(
        "".join(
            f"{variable}={value}\n"
            for variable, value in settings.environment().items()
            if variable not in CONTAINER_SETTINGS
        )
    )
    return {
        "LAKEHOUSE_WAREHOUSE": settings.warehouse,
        "LAKEHOUSE_STATE_DIR": str(settings.state_dir),
        "HOST_UID": str(os.getuid()),
        "HOST_GID": str(os.getgid()),
        "DOCKER_BUILDKIT": "0",
    }


def compose_down(settings: Settings, delete_volumes: bool = False) -> None:
    """Removes every container of the Compose project, whatever its profile; with
    `delete_volumes`, its named volumes too."""
    _compose(settings, "--profile", "*", "down", *(["--volumes"] if delete_volumes else []))


def start_demo_containers(settings: Settings) -> None:
    """The demo's workers and pages in the Compose mode: profile "demo" of
    docker-compose.yml (`make up`; the native mode starts them as processes)."""
    _compose(settings, "--profile", "demo", "up", "-d", "--wait")


def _profile_services(profile: str) -> list[str]:
    declared = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    return [name for name, service in declared.items() if profile in service.get("profiles", [])]


def in_containers(settings: Settings) -> bool:
    """Whether the running services are Compose's (`up` chose the Docker mode)."""
    return _mode(settings) == "docker"


def start_profile(settings: Settings, profile: str) -> None:
    """The services of Compose profile `profile` ("cluster", "scheduler") beside the running
    ones, from the image `start` built; returns once they are healthy."""
    _compose(settings, "--profile", profile, "up", "-d", "--wait", *_profile_services(profile))


def stop_profile(settings: Settings, profile: str) -> None:
    """Stops and removes the containers of profile `profile` only, keeping their volumes."""
    _compose(settings, "--profile", profile, "rm", "--stop", "--force", *_profile_services(profile))


def run_in_container(settings: Settings, service: str, *command: str) -> None:
    """`command` in the running container of Compose service `service`, as that service's
    user (`docker compose exec`); fails when it does."""
    _compose(settings, "exec", "-T", service, *command)


def stage_certificate_authorities() -> None:
    """Copies into the build context the certificate authorities this host added
    (infra/docker/ca-certificates/README.md)."""
    staged = ROOT / "infra" / "docker" / "ca-certificates"
    for old in staged.glob("*.crt"):
        old.unlink()
    for authority in HOST_CERTIFICATE_AUTHORITIES.glob("*.crt"):
        shutil.copy(authority, staged / authority.name)


def make_base_image(image: str | None = None) -> str:
    """The base image (infra/docker/base-image.sh), `image` or the default; what the script
    said it did."""
    made = subprocess.run(
        ["bash", str(ROOT / "infra" / "docker" / "base-image.sh")],
        capture_output=True,
        text=True,
        env={**os.environ, **({"BASE_IMAGE": image} if image else {})},
    )
    if made.returncode != 0:
        raise ServiceError(f"the base image could not be made:\n{made.stdout}{made.stderr}")
    return made.stdout.strip()


def build_image(settings: Settings, report=print) -> None:
    """The one image every container runs, built from the repository (unchanged layers from
    Docker's cache) on its base image, made first where none is there."""
    stage_certificate_authorities()
    if made := make_base_image():
        report(made)
    _compose(settings, "build")


def isolated(base: Settings, state_dir: Path, offset: int) -> Settings:
    """`base` moved to a state directory and ports of its own (`offset` above the demo's),
    with the jars it already has: a stack started with it (a test session's, a benchmark's)
    starts, writes and stops apart from the demo's, which may run beside it."""
    shifted = {name: getattr(base, name) + offset for name, s in declared().items() if s.kind is PORT}
    return dataclasses.replace(
        base,
        state_dir=state_dir,
        jars_dir=base.jars_dir.resolve(),
        models_dir=state_dir / "models",
        pg_host="localhost",
        kafka_bootstrap=f"localhost:{base.kafka_port + offset}",
        connect_url=f"http://localhost:{base.connect_port + offset}",
        **shifted,
    )


def _mode_file(settings: Settings) -> Path:
    return settings.state_dir / "run" / "mode"


def start(settings: Settings, mode: str = "auto", report=print) -> str:
    """Starts every service, waits until healthy, bootstraps schema, topics and connector."""
    if mode == "auto":
        mode = "docker" if docker_engine_answers() else "native"
    if shutil.which("java") is None and mode == "native":
        raise ServiceError(
            "Java is not installed: Kafka and Kafka Connect need a JDK 17+ "
            "(`make install` or `apt-get install openjdk-17-jre-headless`)."
        )
    _mode_file(settings).parent.mkdir(parents=True, exist_ok=True)
    _mode_file(settings).write_text(mode)
    # The JDBC server's only Postgres account is the metastore's: the catalog's database is
    # made from here, with the superuser's password, before the server starts.
    postgres, *others = native_services(settings)
    if mode == "docker":
        # The image is built again from the repository, so the containers run the code the
        # native mode would.
        build_image(settings, report)
        _compose(settings, "up", "-d", "--wait", postgres.name)
        metastore.ensure(settings)
        _compose(settings, "up", "-d", "--wait")
        # The images earlier builds left unnamed, now that no container runs them.
        subprocess.run(
            ["docker", "image", "prune", "--force", "--filter", f"label={IMAGE_LABEL}"], capture_output=True
        )
    else:
        for service in (postgres, *others):
            began = time.monotonic()
            service.start()
            report(row(service.name, f"healthy in {time.monotonic() - began:5.1f} s"))
            if service is postgres:
                metastore.ensure(settings)
    database.apply_schema(settings, personal_columns())
    topics.create_source_topics(settings)
    outcome = connector.register(settings)
    report(f"connector {connector.connector_definition()['name']} {outcome}, RUNNING")
    return mode


def stop(settings: Settings, report=print, delete_volumes: bool = False) -> None:
    """Stops what `start` started; with `delete_volumes`, Compose's named volumes (the
    services' data, which the native mode keeps under the state directory) go too."""
    cluster.stop(settings, report)
    if _mode(settings) == "docker":
        compose_down(settings, delete_volumes)
    else:
        for service in reversed(native_services(settings)):
            service.stop()
            report(row(service.name, "stopped"))
    _mode_file(settings).unlink(missing_ok=True)


def _mode(settings: Settings) -> str:
    mode_file = _mode_file(settings)
    return mode_file.read_text().strip() if mode_file.exists() else "native"


def _native_service(settings: Settings, name: str):
    services = {service.name: service for service in native_services(settings)}
    if name not in services:
        raise ServiceError(f"no service {name!r}; known: {', '.join(services)}")
    return services[name]


def stop_service(settings: Settings, name: str, crash: bool = False) -> None:
    """Stops one service; `crash` kills it and all its processes at once, as a power cut or
    `docker kill` would (for tests of recovery)."""
    if _mode(settings) == "docker":
        _compose(settings, "kill" if crash else "stop", name)
    elif crash:
        _native_service(settings, name).kill()
    else:
        _native_service(settings, name).stop()


def start_service(settings: Settings, name: str) -> None:
    if _mode(settings) == "docker":
        _compose(settings, "up", "-d", "--wait", name)
    else:
        _native_service(settings, name).start()


def status(settings: Settings) -> list[ServiceStatus]:
    kafka_host = settings.kafka_bootstrap.rsplit(":", 1)[0]
    connect_host = settings.connect_url.split("//", 1)[1].rsplit(":", 1)[0]
    result = [
        ServiceStatus(
            "postgres",
            f"{settings.pg_host}:{settings.pg_port}",
            port_open(settings.pg_host, settings.pg_port),
        ),
        ServiceStatus("kafka", settings.kafka_bootstrap, port_open(kafka_host, settings.kafka_port)),
        ServiceStatus("connect", settings.connect_url, port_open(connect_host, settings.connect_port)),
        ServiceStatus(
            "thrift",
            f"jdbc:hive2://localhost:{settings.thrift_port}",
            port_open(settings.thrift_bind_host, settings.thrift_port),
            f"JDBC/ODBC server over the shared catalog; user {settings.analyst_user}, "
            f"password ANALYST_PASSWORD in .env",
        ),
    ]
    result += [
        ServiceStatus(name, address, healthy, "make cluster")
        for name, address, healthy in cluster.status(settings, in_containers(settings))
    ]
    if result[0].healthy:
        result.append(_slot_status(settings))
    if result[2].healthy:
        state = connector.connector_status(settings)
        healthy = connector.is_running(state)
        detail = (
            json.dumps(
                {"connector": state["connector"]["state"], "tasks": [t["state"] for t in state["tasks"]]}
            )
            if state
            else "not registered"
        )
        if failed := connector.failure(settings):
            detail += f"; {failed}"
        result.append(ServiceStatus("debezium", connector.connector_definition()["name"], healthy, detail))
    return result


def _megabytes(size: int | None) -> str:
    return "unlimited" if size is None else f"{size / 2**20:,.1f} MiB"


def _slot_status(settings: Settings) -> ServiceStatus:
    """The WAL that Debezium's replication slot holds: it grows while Connect is down, and
    past max_slot_wal_keep_size the slot is invalidated (wal_status 'unreserved', then 'lost')."""
    name = connector.connector_definition()["config"]["slot.name"]
    slot = database.replication_slot(settings, name)
    if slot is None:
        return ServiceStatus(
            "wal slot", name, False, "not created yet: Debezium creates it at its first start"
        )
    attached = "Debezium attached" if slot["active"] else "no reader (is Connect down?)"
    return ServiceStatus(
        "wal slot",
        name,
        slot["wal_status"] in ("reserved", "extended"),
        f"{attached}; holds {_megabytes(slot['held_bytes'])} of WAL, "
        f"{_megabytes(slot['safe_bytes'])} more before it is invalidated ({slot['wal_status']})",
    )
