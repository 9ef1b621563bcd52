"""The Kafka, Kafka Connect and Debezium jars, resolved once by Maven into `.lake/jars/`.

The manifests are the two poms beside this file; versions come from infra/versions.env.
Maven keeps its own cache (~/.m2), so a second resolution after `rm -rf .lake` is local.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from infra.native.process import ServiceError
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
    if shutil.which("mvn") is None:
        raise ServiceError("Maven (`mvn`) is needed to fetch the Kafka and Debezium jars: "
                           "run `make install` (or `apt-get install maven`).")
    shutil.rmtree(target, ignore_errors=True)
    command = [
        "mvn", "-q", "-B", "-f", str(MANIFESTS / pom), f"-D{version_property}={version}",
        "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={target}",
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise ServiceError(f"Maven could not resolve {pom} ({version_property}={version}):\n"
                           f"{result.stdout[-3000:]}{result.stderr[-2000:]}")
    done.write_text(version + "\n")


def ensure_jars(state_dir: Path) -> Jars:
    versions = read_versions()
    kafka_dir = state_dir / "jars" / f"kafka-{versions['KAFKA_VERSION']}"
    plugins = state_dir / "jars" / f"connect-plugins-debezium-{versions['DEBEZIUM_VERSION']}"
    _resolve("kafka.pom.xml", "kafka.version", versions["KAFKA_VERSION"], kafka_dir)
    # Connect isolates each plugin in its own class loader: one folder per plugin.
    _resolve("debezium.pom.xml", "debezium.version", versions["DEBEZIUM_VERSION"],
             plugins / "debezium-connector-postgres")
    return Jars(kafka_classpath=f"{kafka_dir}/*", plugin_path=plugins)


if __name__ == "__main__":
    from lakehouse.settings import load

    resolved = ensure_jars(load().state_dir)
    print(f"jars ready: {resolved.kafka_classpath} and plugins in {resolved.plugin_path}")
