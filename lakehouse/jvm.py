"""The project's Java classes, in one jar: the JDBC server's sign-in and read-only guard
(serving/jvm/) and the Bronze decoder's strict JSON check (bronze/jvm/), each beside the
feature it serves. Compiled against PySpark's own jars into `.lake/jars/` by `make install`
(so a process that cannot write there never has to) and again whenever a source changes:
the jar's name carries a digest of the sources. Every Spark session loads it (spark.jars).
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
SOURCE_DIRS = (ROOT / "bronze" / "jvm", ROOT / "serving" / "jvm")
SPARK_JARS = Path(pyspark.__file__).resolve().parent / "jars"
# The class files run on the JVM that runs Spark (17), whichever newer javac compiles them.
JAVA_RELEASE = "17"


def project_jar(jars_dir: Path) -> Path:
    sources = sorted(source for directory in SOURCE_DIRS for source in directory.rglob("*.java"))
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.relative_to(ROOT).as_posix().encode() + b"\0" + source.read_bytes())
    jar = jars_dir / f"retailmax-{digest.hexdigest()[:12]}.jar"
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
                f"{SPARK_JARS}/*",
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
        staged.replace(jar)
    return jar


if __name__ == "__main__":
    from lakehouse.settings import load

    print(f"the project's Java classes: {project_jar(load().jars_dir)}")
