"""Kafka in KRaft mode (one node, broker + controller) and the Kafka Connect worker."""

from __future__ import annotations

import base64
import string
import subprocess
import uuid
from abc import abstractmethod
from pathlib import Path

import requests

from infra.native.jars import ensure_jars
from infra.native.process import ServiceError, SupervisedService, wait_until
from lakehouse.network import port_open

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


class JvmService(SupervisedService):
    """A JVM service run from the resolved jars with a properties file of its own."""

    port: int
    heap: str
    main_class: str
    # Neither broker nor worker needs the project's secrets, but the one `environment` names
    # (the worker's connector resolves it, and nothing else, through its env provider).
    inherit_secrets = False

    @abstractmethod
    def config(self) -> Path:
        """Writes the service's properties file and returns its path."""

    def command(self) -> list[str]:
        jars = ensure_jars(self.settings.jars_dir)
        return [
            "java",
            f"-Xms{self.heap}",
            f"-Xmx{self.heap}",
            *JVM_BASE,
            "-cp",
            jars.kafka_classpath,
            self.main_class,
            str(self.config()),
        ]

    def stop(self) -> None:
        super().stop()
        self._wait_port_released()

    def kill(self) -> None:
        super().kill()
        self._wait_port_released()

    def _wait_port_released(self) -> None:
        # A killed JVM's leader thread turns zombie before its other threads have exited and
        # closed the listening socket; a restart in that gap would find the port taken.
        wait_until(
            lambda: not port_open("localhost", self.port), 30, f"{self.name} port {self.port} release", None
        )


class NativeKafka(JvmService):
    name = "kafka"
    heap = "1g"
    main_class = "kafka.Kafka"
    startup_timeout = 90

    @property
    def port(self) -> int:
        return self.settings.kafka_port

    @property
    def _data(self) -> Path:
        return self.settings.state_dir / "kafka" / "data"

    def ports(self) -> list[tuple[str, int, str]]:
        return [
            ("Kafka", self.port, "KAFKA_BOOTSTRAP_SERVERS"),
            ("Kafka's controller", self.port + 1, "KAFKA_BOOTSTRAP_SERVERS"),
        ]

    def config(self) -> Path:
        return _render(
            "kafka-server.properties",
            self.settings.state_dir / "kafka" / "server.properties",
            kafka_port=self.port,
            controller_port=self.port + 1,
            data_dir=self._data,
        )

    def setup(self) -> None:
        config = self.config()
        if not (self._data / "meta.properties").exists():
            cluster_id = _random_cluster_id()
            jars = ensure_jars(self.settings.jars_dir)
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

    def healthy(self) -> bool:
        return port_open("localhost", self.port)


class NativeConnect(JvmService):
    name = "connect"
    heap = "1g"
    main_class = "org.apache.kafka.connect.cli.ConnectDistributed"
    startup_timeout = 120

    @property
    def port(self) -> int:
        return self.settings.connect_port

    def ports(self) -> list[tuple[str, int, str]]:
        return [("Kafka Connect", self.port, "CONNECT_URL")]

    def config(self) -> Path:
        return _render(
            "connect-distributed.properties",
            self.settings.state_dir / "connect" / "connect-distributed.properties",
            kafka_bootstrap=self.settings.kafka_bootstrap,
            connect_port=self.port,
            plugin_path=ensure_jars(self.settings.jars_dir).plugin_path,
        )

    def environment(self) -> dict[str, str]:
        # The connector config refers to these by ${env:...}; see ingestion/connector.py.
        return {
            "DEBEZIUM_PASSWORD": self.settings.debezium_password,
            "SOURCE_DB_HOST": "localhost",
            "SOURCE_DB_PORT": str(self.settings.pg_port),
        }

    def healthy(self) -> bool:
        try:
            plugins = requests.get(f"{self.settings.connect_url}/connector-plugins", timeout=2)
        except requests.RequestException:
            return False
        return plugins.ok and any("PostgresConnector" in p["class"] for p in plugins.json())
