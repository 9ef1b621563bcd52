"""The project's Java classes, compiled from the sources beside the feature each serves:

- for Spark, one jar: the JDBC server's sign-in and read-only guard (serving/jvm/), the
  Bronze decoder's strict JSON check (bronze/jvm/) and the sessions' pruning of Hadoop
  defaults (lakehouse/jvm/), compiled against PySpark's own jars.
  Every Spark session loads it (spark.jars).
- for Kafka Connect, a plugin: the guard that keeps an oversized change event from failing
  the Debezium connector (ingestion/jvm/), compiled against Kafka's jars, with the
  ServiceLoader manifest that names it (ingestion/jvm/META-INF/services/): Connect finds
  its plugins from the manifests alone (`plugin.discovery=service_load`) instead of
  scanning every class of every plugin jar.

Files under a source folder's `META-INF/` go into its jar as they are.

`make install` compiles them into `.lake/jars/` (so a process that cannot write there never
has to), and so does any start after a source changed: a jar's name carries a digest of its
sources.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pyspark

from lakehouse.settings import ConfigurationError

ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIRS = (ROOT / "lakehouse" / "jvm", ROOT / "bronze" / "jvm", ROOT / "serving" / "jvm")
CONNECT_SOURCE_DIRS = (ROOT / "ingestion" / "jvm",)
SPARK_JARS = Path(pyspark.__file__).resolve().parent / "jars"
# The class files run on the JVM that runs Spark and Connect (17), whichever newer javac
# compiles them.
JAVA_RELEASE = "17"


def project_jar(jars_dir: Path) -> Path:
    """The jar of the classes Spark sessions load."""
    return compiled_jar(jars_dir, "retailmax", SOURCE_DIRS, f"{SPARK_JARS}/*")


def connect_plugin_jar(plugin_dir: Path, kafka_classpath: str) -> Path:
    """The jar of the Connect plugin, alone in `plugin_dir` (Connect would load an older
    copy beside it too)."""
    jar = compiled_jar(plugin_dir, "retailmax-connect", CONNECT_SOURCE_DIRS, kafka_classpath)
    for stale in plugin_dir.glob("retailmax-connect-*.jar"):
        if stale != jar:
            stale.unlink()
    return jar


def compiled_jar(jars_dir: Path, name: str, source_dirs: tuple[Path, ...], classpath: str) -> Path:
    sources = sorted(source for directory in source_dirs for source in directory.rglob("*.java"))
    resources = {
        resource.relative_to(directory).as_posix(): resource
        for directory in source_dirs
        for resource in sorted((directory / "META-INF").rglob("*"))
        if resource.is_file()
    }
    digest = hashlib.sha256()
    for source in [*sources, *resources.values()]:
        digest.update(source.relative_to(ROOT).as_posix().encode() + b"\0" + source.read_bytes())
    jar = jars_dir / f"{name}-{digest.hexdigest()[:12]}.jar"
    if jar.exists():
        return jar
    if shutil.which("javac") is None:
        raise ConfigurationError(
            "the project's Java classes need a Java compiler (`javac`): "
            "run `make install` (it installs openjdk-17-jdk-headless)"
        )
    with tempfile.TemporaryDirectory() as classes:
        result = subprocess.run(
            [
                "javac",
                "--release",
                JAVA_RELEASE,
                "-Xlint:-path",
                "-d",
                classes,
                "-cp",
                classpath,
                *map(str, sources),
            ],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise ConfigurationError(
                f"compiling the project's Java classes failed:\n{result.stdout}{result.stderr}"
            )
        jar.parent.mkdir(parents=True, exist_ok=True)
        staged = jar.with_suffix(".partial")
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as archive:
            for compiled in sorted(Path(classes).rglob("*.class")):
                archive.write(compiled, compiled.relative_to(classes).as_posix())
            for name_in_jar, resource in resources.items():
                archive.write(resource, name_in_jar)
        staged.replace(jar)
    return jar


if __name__ == "__main__":
    from lakehouse.settings import load

    print(f"the project's Java classes: {project_jar(load().jars_dir)}")
