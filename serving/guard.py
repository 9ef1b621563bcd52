"""The JDBC server's two Java classes (serving/jvm/): the analyst sign-in and the read-only
guard. Compiled once against PySpark's own jars into `.lake/jars/` (`make install` does it, so
a server that runs as an unprivileged user never has to write there), and again whenever a
source changes: the jar's name carries a digest of the sources.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from infra.metastore import SPARK_JARS
from infra.native.process import ServiceError

SOURCES = Path(__file__).resolve().parent / "jvm"
AUTHENTICATION_CLASS = "org.retailmax.serving.AnalystPassword"
READ_ONLY_EXTENSION = "org.retailmax.serving.ReadOnlyAnalysts"
# The class files run on the JVM that runs Spark (17), whichever newer javac compiles them.
JAVA_RELEASE = "17"


def guard_jar(state_dir: Path) -> Path:
    sources = sorted(SOURCES.rglob("*.java"))
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.relative_to(SOURCES).as_posix().encode() + b"\0" + source.read_bytes())
    jar = state_dir / "jars" / f"retailmax-serving-{digest.hexdigest()[:12]}.jar"
    if jar.exists():
        return jar
    if shutil.which("javac") is None:
        raise ServiceError("the JDBC server's guard needs a Java compiler (`javac`): run "
                           "`make install` (it installs openjdk-17-jdk-headless)")
    with tempfile.TemporaryDirectory() as classes:
        result = subprocess.run(
            ["javac", "--release", JAVA_RELEASE, "-Xlint:-path", "-d", classes,
             "-cp", f"{SPARK_JARS}/*", *map(str, sources)], capture_output=True, text=True)
        if result.returncode != 0:
            raise ServiceError(f"compiling {SOURCES} failed:\n{result.stdout}{result.stderr}")
        jar.parent.mkdir(parents=True, exist_ok=True)
        staged = jar.with_suffix(".partial")
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as archive:
            for compiled in sorted(Path(classes).rglob("*.class")):
                archive.write(compiled, compiled.relative_to(classes).as_posix())
        staged.replace(jar)
    return jar


if __name__ == "__main__":
    from lakehouse.settings import load

    print(f"JDBC server guard ready: {guard_jar(load().state_dir)}")
