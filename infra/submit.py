"""`python -m infra.submit <lakehouse command>`: the command through `spark-submit`, with the
project packaged as a zip (--py-files) and Hudi and the Kafka connector as --packages.

A session started by `spark-submit` is launched before the job's Python runs, so what the
builder would set at launch (packages, the driver's class path and memory) goes on the
command line; everything else is the same `session_config` every job uses. The master is
SPARK_MASTER (the cluster's, `make cluster`), the driver this machine (client mode: Spark
runs Python applications on a standalone cluster in no other).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lakehouse.settings import load
from lakehouse.spark import session_config

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"
ENTRY = Path(__file__).resolve().parent / "spark" / "submit_main.py"
# Launch-time settings: spark-submit's own options, not --conf.
LAUNCH_OPTIONS = {
    "spark.jars.packages": "--packages",
    "spark.driver.memory": "--driver-memory",
    "spark.driver.extraClassPath": "--driver-class-path",
}


def package() -> Path:
    """The project as a zip Python imports from: the wheel `pip` builds, which holds the
    packages and their SQL, JSON and XML files (pyproject.toml, package-data)."""
    DIST.mkdir(exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(DIST), str(ROOT)], check=True
    )
    wheel = max(DIST.glob("retailmax_lakehouse-*.whl"), key=lambda p: p.stat().st_mtime)
    # PySpark puts --py-files on the path by their extension, which must be .zip.
    archive = DIST / "retailmax-lakehouse.zip"
    archive.write_bytes(wheel.read_bytes())
    return archive


def command(arguments: list[str], archive: Path) -> list[str]:
    master = os.environ.get("SPARK_MASTER")
    if not master:
        sys.exit(
            "SPARK_MASTER is not set: export the cluster's master, e.g. "
            "SPARK_MASTER=spark://127.0.0.1:7077 (`make cluster` starts one)"
        )
    config = session_config(load())
    launch = [
        item for key, option in LAUNCH_OPTIONS.items() if key in config for item in (option, config.pop(key))
    ]
    confs = [item for key, value in config.items() for item in ("--conf", f"{key}={value}")]
    return [
        str(Path(sys.executable).parent / "spark-submit"),
        "--master",
        master,
        *launch,
        *confs,
        "--py-files",
        str(archive),
        str(ENTRY),
        *arguments,
    ]


if __name__ == "__main__":
    submitted = command(sys.argv[1:], package())
    # The driver's Python is this environment's, which has the project's dependencies.
    os.execve(
        submitted[0],
        submitted,
        {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable},
    )
