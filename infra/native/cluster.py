"""A Spark standalone cluster and HDFS as native processes, for `make cluster`.

Spark's master and workers come from PySpark's own jars: the pip package has `bin/spark-class`
but no `sbin/` start scripts, so each daemon is `spark-class <main class>` under a pid file,
as the other native services are. HDFS is one NameNode and one DataNode from the Hadoop jars
(infra/native/hadoop.pom.xml), the release PySpark's client jars come from. Logs go to
`.lake/logs/`, state to `.lake/cluster/`.

Each port is a setting (SPARK_MASTER_PORT and SPARK_MASTER_UI_PORT, the workers' UIs on the
ports after it, HDFS_NAMENODE_PORT and HDFS_NAMENODE_UI_PORT), so a second cluster, a test
session's, runs beside the first; the DataNode takes free ports and tells the NameNode, as
Hadoop's own test clusters do. Everything listens on 127.0.0.1 only.
"""

# Why one module: the master, the workers and HDFS are started, checked and stopped as one
# cluster (`make cluster`), and each daemon is a few lines over the shared base class here
# (itself over process.py's SupervisedService).

from __future__ import annotations

import json
import subprocess
import time
from abc import abstractmethod
from pathlib import Path
from xml.sax.saxutils import escape

import pyspark
import requests

from infra.native.jars import hadoop_classpath
from infra.native.process import ServiceError, SupervisedService
from lakehouse.network import port_open
from lakehouse.settings import Settings

SPARK_HOME = Path(pyspark.__file__).resolve().parent
HOST = "127.0.0.1"
DATANODE_PORT_KEYS = ("dfs.datanode.address", "dfs.datanode.http.address", "dfs.datanode.ipc.address")
# Each daemon's own heap; what a worker offers executors is SPARK_WORKER_MEMORY.
DAEMON_HEAP = "512m"


def master_url(settings: Settings) -> str:
    return f"spark://{HOST}:{settings.spark_master_port}"


def hdfs_url(settings: Settings) -> str:
    return f"hdfs://{HOST}:{settings.hdfs_namenode_port}"


class ClusterDaemon(SupervisedService):
    """One daemon of the cluster; `address` is where its clients or its UI reach it."""

    address: str
    startup_timeout = 90

    def __init__(self, settings: Settings):
        super().__init__(settings)
        self.home = settings.state_dir / "cluster"


class HdfsDaemon(ClusterDaemon):
    main_class: str

    def command(self) -> list[str]:
        conf = write_hadoop_conf(self.settings)
        return [
            "java",
            f"-Xmx{DAEMON_HEAP}",
            "-cp",
            f"{conf}:{hadoop_classpath(self.settings.jars_dir)}",
            self.main_class,
        ]

    def _namenode_info(self) -> dict | None:
        try:
            answer = requests.get(
                f"http://{HOST}:{self.settings.hdfs_namenode_ui_port}/jmx",
                params={"qry": "Hadoop:service=NameNode,name=NameNodeInfo"},
                timeout=2,
            )
            return answer.json()["beans"][0] if answer.ok and answer.json()["beans"] else None
        except (requests.RequestException, ValueError, KeyError):
            return None


class NameNode(HdfsDaemon):
    name = "hdfs-namenode"
    main_class = "org.apache.hadoop.hdfs.server.namenode.NameNode"

    @property
    def address(self) -> str:
        return hdfs_url(self.settings)

    def ports(self):
        return [
            (self.name, self.settings.hdfs_namenode_port, "HDFS_NAMENODE_PORT"),
            (self.name, self.settings.hdfs_namenode_ui_port, "HDFS_NAMENODE_UI_PORT"),
        ]

    def setup(self) -> None:
        if (self.home / "hdfs" / "name" / "current" / "VERSION").exists():
            return
        result = subprocess.run(
            [*self.command(), "-format", "-nonInteractive"], capture_output=True, text=True
        )
        if result.returncode != 0:
            raise ServiceError(
                f"Formatting the NameNode failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
            )

    def healthy(self) -> bool:
        return port_open(HOST, self.settings.hdfs_namenode_port) and self._namenode_info() is not None


class DataNode(HdfsDaemon):
    name = "hdfs-datanode"
    main_class = "org.apache.hadoop.hdfs.server.datanode.DataNode"
    address = "free ports, registered with the NameNode"

    def ports(self):
        return []

    def healthy(self) -> bool:
        """Registered with the NameNode, which has left safe mode: HDFS takes writes."""
        info = self._namenode_info()
        return bool(info and json.loads(info.get("LiveNodes") or "{}") and not info.get("Safemode"))


class SparkDaemon(ClusterDaemon):
    main_class: str

    def command(self) -> list[str]:
        return [str(SPARK_HOME / "bin" / "spark-class"), self.main_class, *self.arguments()]

    def environment(self) -> dict[str, str]:
        # --host binds a daemon's RPC; its web UI binds to SPARK_LOCAL_IP (all interfaces
        # without it).
        return {"SPARK_HOME": str(SPARK_HOME), "SPARK_DAEMON_MEMORY": DAEMON_HEAP, "SPARK_LOCAL_IP": HOST}

    @abstractmethod
    def arguments(self) -> list[str]: ...

    def _master_state(self) -> dict | None:
        try:
            answer = requests.get(f"http://{HOST}:{self.settings.spark_master_ui_port}/json", timeout=2)
            return answer.json() if answer.ok else None
        except (requests.RequestException, ValueError):
            return None


class SparkMaster(SparkDaemon):
    name = "spark-master"
    main_class = "org.apache.spark.deploy.master.Master"

    @property
    def address(self) -> str:
        return master_url(self.settings)

    def ports(self):
        return [
            (self.name, self.settings.spark_master_port, "SPARK_MASTER_PORT"),
            (self.name, self.settings.spark_master_ui_port, "SPARK_MASTER_UI_PORT"),
        ]

    def arguments(self) -> list[str]:
        return [
            "--host",
            HOST,
            "--port",
            str(self.settings.spark_master_port),
            "--webui-port",
            str(self.settings.spark_master_ui_port),
        ]

    def healthy(self) -> bool:
        state = self._master_state()
        return bool(state and state.get("status") == "ALIVE")


class SparkWorker(SparkDaemon):
    main_class = "org.apache.spark.deploy.worker.Worker"

    def __init__(self, settings: Settings, number: int):
        self.number = number
        self.name = f"spark-worker-{number}"
        super().__init__(settings)

    @property
    def ui_port(self) -> int:
        return self.settings.spark_master_ui_port + self.number

    @property
    def address(self) -> str:
        return f"http://{HOST}:{self.ui_port}/"

    def ports(self):
        return [(self.name, self.ui_port, "SPARK_MASTER_UI_PORT")]

    def arguments(self) -> list[str]:
        return [
            "--host",
            HOST,
            "--cores",
            str(self.settings.spark_worker_cores),
            "--memory",
            self.settings.spark_worker_memory,
            "--webui-port",
            str(self.ui_port),
            master_url(self.settings),
        ]

    def environment(self) -> dict[str, str]:
        # Executors' logs and the files they are sent (jars, --py-files) live here.
        work = self.home / "work" / self.name
        work.mkdir(parents=True, exist_ok=True)
        # Shuffle files go to one directory for every worker of a host: Spark reads the
        # output of an executor on the same host from disk (spark.shuffle.readHostLocalDisk),
        # so in containers sharing the host's network it must be one shared volume, not /tmp.
        scratch = self.home / "scratch"
        scratch.mkdir(parents=True, exist_ok=True)
        return {**super().environment(), "SPARK_WORKER_DIR": str(work), "SPARK_LOCAL_DIRS": str(scratch)}

    def healthy(self) -> bool:
        state = self._master_state()
        return bool(state) and any(
            w.get("state") == "ALIVE" and w.get("webuiaddress", "").endswith(f":{self.ui_port}")
            for w in state.get("workers", [])
        )


def daemons(settings: Settings) -> list[ClusterDaemon]:
    """In start order: HDFS, then Spark's master and its workers."""
    return [
        NameNode(settings),
        DataNode(settings),
        SparkMaster(settings),
        *(SparkWorker(settings, n) for n in range(1, settings.spark_workers + 1)),
    ]


def write_hadoop_conf(settings: Settings) -> Path:
    """The configuration directory both HDFS daemons run with (it is on their class path)."""
    home = settings.state_dir / "cluster"
    conf = home / "hadoop-conf"
    properties = {
        "core-site.xml": {"fs.defaultFS": hdfs_url(settings)},
        "hdfs-site.xml": {
            "dfs.namenode.name.dir": str(home / "hdfs" / "name"),
            "dfs.datanode.data.dir": str(home / "hdfs" / "data"),
            "dfs.namenode.rpc-bind-host": HOST,
            "dfs.namenode.http-address": f"{HOST}:{settings.hdfs_namenode_ui_port}",
            **{key: f"{HOST}:0" for key in DATANODE_PORT_KEYS},
            # One DataNode: one copy of each block.
            "dfs.replication": "1",
            # Hudi and Spark write as the user running them; there is one.
            "dfs.permissions.enabled": "false",
            # Leave safe mode as soon as the blocks are reported, not 30 s later.
            "dfs.namenode.safemode.extension": "0",
        },
    }
    for name, values in properties.items():
        conf.mkdir(parents=True, exist_ok=True)
        rows = "".join(
            f"  <property><name>{key}</name><value>{escape(value)}</value></property>\n"
            for key, value in values.items()
        )
        (conf / name).write_text(f"<configuration>\n{rows}</configuration>\n")
    (conf / "log4j.properties").write_text(
        "log4j.rootLogger=INFO, console\n"
        "log4j.appender.console=org.apache.log4j.ConsoleAppender\n"
        "log4j.appender.console.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{1}: %m%n\n"
    )
    # The daemons' web servers look their static pages up on the class path; Maven's jars do
    # not carry them (the Hadoop tarball does), and empty folders serve the JMX API all the same.
    for webapp in ("hdfs", "datanode"):
        (conf / "webapps" / webapp).mkdir(parents=True, exist_ok=True)
    return conf


def start(settings: Settings, report=print) -> None:
    for daemon in daemons(settings):
        began = time.monotonic()
        daemon.start()
        report(f"{daemon.name:<14} healthy in {time.monotonic() - began:5.1f} s (log {daemon.log})")


# The image's Python (infra/docker/Dockerfile), which executors in containers run.
IMAGE_PYTHON = "/opt/venv/bin/python"


def usage(settings: Settings, in_containers: bool = False) -> str:
    """Where the cluster answers and how a job runs on it; in containers, its executors' Python
    is the image's, not the command's."""
    return (
        f"Spark master {master_url(settings)} (UI http://{HOST}:{settings.spark_master_ui_port}/), "
        f"HDFS {hdfs_url(settings)} (UI http://{HOST}:{settings.hdfs_namenode_ui_port}/). Run the jobs on it "
        f"with SPARK_MASTER={master_url(settings)} "
        f"LAKEHOUSE_WAREHOUSE={hdfs_url(settings)}/retailmax/warehouse"
        + (f" SPARK_EXECUTOR_PYTHON={IMAGE_PYTHON}" if in_containers else "")
    )


def stop(settings: Settings, report=print) -> None:
    for daemon in reversed(daemons(settings)):
        if daemon.running():
            daemon.stop()
            report(f"{daemon.name:<14} stopped")


def status(settings: Settings, in_containers: bool = False) -> list[tuple[str, str, bool]]:
    """(daemon, address, healthy) of each daemon, when the cluster runs at all. With
    `in_containers`, it runs as Compose's profile "cluster" (answering on the same ports)
    rather than as processes here, so only its answers tell."""
    found = daemons(settings)
    running = [in_containers or daemon.running() for daemon in found]
    healthy = [up and daemon.healthy() for daemon, up in zip(found, running, strict=True)]
    if not any(healthy if in_containers else running):
        return []
    return [(daemon.name, daemon.address, up) for daemon, up in zip(found, healthy, strict=True)]
