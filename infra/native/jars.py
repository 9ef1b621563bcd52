"""The Kafka, Kafka Connect and Debezium jars, the jars Spark needs on its driver's class
path (the metastore's JDBC driver, Hudi for the JDBC server), and HDFS's (`make cluster`),
resolved once by Maven into `.lake/jars/`.

The manifests of the services are the poms beside this file; versions come from infra/versions.env.
Maven keeps its own cache (~/.m2), so a second resolution after `rm -rf .lake` is local.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from infra.native.process import ServiceError
from lakehouse import artifacts
from lakehouse.jvm import connect_plugin_jar
from lakehouse.settings import read_versions

MANIFESTS = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Jars:
    kafka_classpath: str
    plugin_path: Path


def _resolve(pom: str, version_property: str, version: str, target: Path) -> None:
    done = target / ".resolved"
    if done.exists():
        return
    _require_maven()
    shutil.rmtree(target, ignore_errors=True)
    command = [
        "mvn",
        "-q",
        "-B",
        "-f",
        str(MANIFESTS / pom),
        f"-D{version_property}={version}",
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={target}",
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise ServiceError(
            f"Maven could not resolve {pom} ({version_property}={version}):\n"
            f"{result.stdout[-3000:]}{result.stderr[-2000:]}"
        )
    done.write_text(version + "\n")


def _require_maven() -> None:
    if shutil.which("mvn") is None:
        raise ServiceError(
            "Maven (`mvn`) is needed to fetch the service jars: "
            "run `make install` (or `apt-get install maven`)."
        )


def ensure_jars(jars_dir: Path) -> Jars:
    versions = read_versions()
    kafka_dir = jars_dir / f"kafka-{versions['KAFKA_VERSION']}"
    plugins = jars_dir / f"connect-plugins-debezium-{versions['DEBEZIUM_VERSION']}"
    _resolve("kafka.pom.xml", "kafka.version", versions["KAFKA_VERSION"], kafka_dir)
    # Connect isolates each plugin in its own class loader: one folder per plugin.
    _resolve(
        "debezium.pom.xml",
        "debezium.version",
        versions["DEBEZIUM_VERSION"],
        plugins / "debezium-connector-postgres",
    )
    connect_plugin_jar(plugins / "retailmax-connect", f"{kafka_dir}/*")
    metastore_driver_jar(jars_dir)
    hudi_bundle_jar(jars_dir)
    return Jars(kafka_classpath=f"{kafka_dir}/*", plugin_path=plugins)


def hadoop_classpath(jars_dir: Path) -> str:
    """The HDFS NameNode's and DataNode's jars (`make cluster`)."""
    version = read_versions()["HADOOP_VERSION"]
    target = jars_dir / f"hadoop-{version}"
    _resolve("hadoop.pom.xml", "hadoop.version", version, target)
    return f"{target}/*"


def metastore_driver_jar(jars_dir: Path) -> Path:
    """The pgjdbc jar. Spark needs it on the driver's class path, not in spark.jars.packages:
    the Hive client's connection pool finds drivers through java.sql.DriverManager, which
    ignores the class loader those packages are added to."""
    return _copy(artifacts.pgjdbc(), jars_dir)


def hudi_bundle_jar(jars_dir: Path) -> Path:
    """The Hudi bundle, for the JDBC server's class path: the server's connection threads
    use Hive's class loader, which cannot see the jars of spark.jars.packages."""
    return _copy(artifacts.hudi_bundle(), jars_dir)


def _copy(coordinates: str, jars_dir: Path) -> Path:
    """One artifact (group:artifact:version), without its dependencies, under `jars_dir`."""
    jar = artifacts.jar_file(coordinates, jars_dir)
    if jar.exists():
        return jar
    _require_maven()
    result = subprocess.run(
        [
            "mvn",
            "-q",
            "-B",
            "dependency:copy",
            f"-Dartifact={coordinates}",
            f"-DoutputDirectory={jar.parent}",
        ],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0 or not jar.exists():
        raise ServiceError(
            f"Maven could not fetch {coordinates}:\n{result.stdout[-3000:]}{result.stderr[-2000:]}"
        )
    return jar


if __name__ == "__main__":
    from lakehouse.settings import load

    jars_dir = load().jars_dir
    resolved = ensure_jars(jars_dir)
    print(
        f"jars ready: {resolved.kafka_classpath}, plugins in {resolved.plugin_path}, "
        f"{metastore_driver_jar(jars_dir)}, {hudi_bundle_jar(jars_dir)}, "
        f"{hadoop_classpath(jars_dir)}"
    )
