"""Kafka in KRaft mode (one node, broker + controller) and the Kafka Connect worker."""

from __future__ import annotations

import base64
import string
import subprocess
import uuid
from pathlib import Path

import requests

from infra.native.jars import ensure_jars
from infra.native.process import (
    BackgroundProcess,
    ServiceError,
    ensure_port_free,
    port_open,
    wait_until,
)
from lakehouse.settings import Settings

CONFIG_DIR = Path(__file__).resolve().parent.parent / "config"
JVM_BASE = [
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-Djava.awt.headless=true",
    f"-Dlog4j2.configurationFile={CONFIG_DIR / 'log4j2.properties'}",
]


def _random_cluster_id() -> str:
    """A KRaft cluster id as Kafka draws them: a random UUID in URL-safe base64.

    Like Kafka's own `Uuid.randomUuid`, this redraws ids that start with "-": the storage
    tool's argument parser would take such an id for an option (1 draw in 64).
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def _render(template: str, target: Path, **values: object) -> Path:
    text = string.Template((CONFIG_DIR / template).read_text()).substitute(values)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return target


class JvmService:
    """A JVM service run from the resolved jars, supervised by a pid file."""

    name: str
    port: int
    variable: str
    heap: str
    main_class: str
    startup_timeout: float

    def __init__(self, settings: Settings):
        self.settings = settings
        self.process = BackgroundProcess(self.name, settings.state_dir / "run", settings.state_dir / "logs")
        self.log = self.process.log

    def running(self) -> bool:
        return self.process.running()

    def _java(self, config: Path, env: dict[str, str] | None = None) -> None:
        jars = ensure_jars(self.settings.state_dir)
        # Neither broker nor worker needs the project's secrets, but the one `env` names (the
        # worker's connector resolves it, and nothing else, through its env provider).
        self.process.start(
            [
                "java",
                f"-Xms{self.heap}",
                f"-Xmx{self.heap}",
                *JVM_BASE,
                "-cp",
                jars.kafka_classpath,
                self.main_class,
                str(config),
            ],
            env=env,
            inherit_secrets=False,
        )
        wait_until(
            self.healthy,
            self.startup_timeout,
            f"{self.name} (log {self.log})",
            self.log,
            alive=self.process.running,
        )

    def stop(self) -> None:
        self.process.stop()
        self._wait_port_released()

    def kill(self) -> None:
        self.process.kill()
        self._wait_port_released()

    def _wait_port_released(self) -> None:
        # A killed JVM's leader thread turns zombie before its other threads have exited and
        # closed the listening socket; a restart in that gap would find the port taken.
        wait_until(
            lambda: not port_open("localhost", self.port), 30, f"{self.name} port {self.port} release", None
        )


class NativeKafka(JvmService):
    name = "kafka"
    variable = "KAFKA_BOOTSTRAP_SERVERS"
    heap = "1g"
    main_class = "kafka.Kafka"
    startup_timeout = 90

    @property
    def port(self) -> int:
        return self.settings.kafka_port

    def start(self) -> None:
        if self.running():
            return
        ensure_port_free("Kafka", self.port, self.variable)
        ensure_port_free("Kafka's controller", self.port + 1, self.variable)
        home = self.settings.state_dir / "kafka"
        data = home / "data"
        config = _render(
            "kafka-server.properties",
            home / "server.properties",
            kafka_port=self.port,
            controller_port=self.port + 1,
            data_dir=data,
        )
        if not (data / "meta.properties").exists():
            cluster_id = _random_cluster_id()
            jars = ensure_jars(self.settings.state_dir)
            result = subprocess.run(
                [
                    "java",
                    "-Xmx256m",
                    *JVM_BASE,
                    "-cp",
                    jars.kafka_classpath,
                    "kafka.tools.StorageTool",
                    "format",
                    f"--cluster-id={cluster_id}",
                    "-c",
                    str(config),
                ],
                capture_output=True,
                text=True,
            )
            if result.returncode != 0:
                raise ServiceError(
                    f"Formatting Kafka's log directory failed:\n{result.stdout}{result.stderr}"
                )
        self._java(config)

    def healthy(self) -> bool:
        return port_open("localhost", self.port)


class NativeConnect(JvmService):
    name = "connect"
    variable = "CONNECT_URL"
    heap = "1g"
    main_class = "org.apache.kafka.connect.cli.ConnectDistributed"
    startup_timeout = 120

    @property
    def port(self) -> int:
        return self.settings.connect_port

    def start(self) -> None:
        if self.running():
            return
        ensure_port_free("Kafka Connect", self.port, self.variable)
        jars = ensure_jars(self.settings.state_dir)
        config = _render(
            "connect-distributed.properties",
            self.settings.state_dir / "connect" / "connect-distributed.properties",
            kafka_bootstrap=self.settings.kafka_bootstrap,
            connect_port=self.port,
            plugin_path=jars.plugin_path,
        )
        # The connector config refers to these by ${env:...}; see ingestion/connector.py.
        env = {
            "DEBEZIUM_PASSWORD": self.settings.debezium_password,
            "SOURCE_DB_HOST": "localhost",
            "SOURCE_DB_PORT": str(self.settings.pg_port),
        }
        self._java(config, env=env)

    def healthy(self) -> bool:
        try:
            plugins = requests.get(f"{self.settings.connect_url}/connector-plugins", timeout=2)
        except requests.RequestException:
            return False
        return plugins.ok and any("PostgresConnector" in p["class"] for p in plugins.json())
