"""A class-data-sharing archive of the classes a Spark session loads, which the JVM of every
session of the shared catalog maps at start instead of reading, verifying and linking them
from jars again.

Starting the driver's JVM and its first query load tens of thousands of Spark's and Hudi's
classes: that was about a third of a short command's time (CHANGELOG.md, 2026-12-05).
`make install` builds the archive (`python -m lakehouse.class_archive`): a small session
writes and reads a Hudi table of each type, registered in a Hive metastore on an in-memory
Derby database, with the JVM dumping every class it loaded at
exit (`-XX:ArchiveClassesAtExit`); `lakehouse.spark.session` then starts those JVMs with
it (`-XX:SharedArchiveFile`). The archive only saves time: a JVM whose class path or heap
settings differ from the archive's ignores it, and a class whose jar changed since is
loaded from the jar (the JVM checks each archived class against its class file).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakehouse import hudi
from lakehouse.jvm import project_jar
from lakehouse.settings import Settings, load
from lakehouse.spark import catalog_config, class_archive, session, session_config, spark_packages
from lakehouse.tables import Table


def build(settings: Settings) -> Path:
    """Builds the archive in a process of its own (a JVM writes it as it exits), unless the
    one there was built from the same JVM, Spark, packages and exercise."""
    archive = class_archive(settings)
    stamp = archive.with_suffix(".built-from")
    if archive.exists() and stamp.exists() and stamp.read_text() == _built_from(settings):
        return archive
    archive.unlink(missing_ok=True)  # a session started with the old one could not dump
    partial = archive.with_suffix(".partial")
    subprocess.run([sys.executable, "-m", "lakehouse.class_archive", str(partial)], check=True)
    partial.replace(archive)
    stamp.write_text(_built_from(settings))
    return archive


def _built_from(settings: Settings) -> str:
    # The java Spark's launcher starts: JAVA_HOME's, else the one on PATH.
    launcher = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if "JAVA_HOME" in os.environ else "java"
    java = subprocess.run([launcher, "-version"], capture_output=True, text=True).stderr
    exercise = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    return json.dumps(
        [java, pyspark.__version__, spark_packages(settings), str(project_jar(settings.jars_dir)), exercise]
    )


def _exercise(spark: SparkSession, warehouse: str, settings: Settings) -> None:
    """What a pipeline session does first: Hudi upserts into a merge-on-read and a
    copy-on-write table, snapshot and change-log reads, a join and an aggregate, and a
    collect through Arrow."""
    rows = spark.range(200).select(
        F.col("id"), (F.col("id") % 7).alias("group_id"), F.current_timestamp().alias("changed_at")
    )
    for table_type in ("MERGE_ON_READ", "COPY_ON_WRITE"):
        table = Table(
            f"classes_{table_type.lower()}", "bronze", table_type, ("id",), ("changed_at",), change_log=True
        )
        path = f"{warehouse}/{table.name}"
        for batch in (rows, rows.where("id < 50").withColumn("group_id", F.lit(0))):
            hudi.write(batch, table, settings, "upsert", path=path)
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {table.layer} LOCATION '{warehouse}'")
        spark.sql(f"CREATE TABLE {table.qualified_name} USING hudi LOCATION '{path}'")
        snapshot = spark.table(table.qualified_name)
        snapshot.join(rows.select("id"), "id").groupBy("group_id").agg(
            F.count("*"), F.max("changed_at")
        ).toPandas()
        first = snapshot.agg(F.min("_hoodie_commit_time")).first()[0]
        hudi.change_log(spark, path, first).count()


if __name__ == "__main__":
    if len(sys.argv) == 1:  # `make install`
        print(f"class archive ready: {build(load())}")
        sys.exit()
    with tempfile.TemporaryDirectory(prefix="class-archive-") as warehouse:
        # The pipeline's sessions have the metastore's JDBC driver on the class path (from
        # catalog_config); the archive must be made with the same class path to be used.
        settings = dataclasses.replace(load(), metastore_database="", warehouse=warehouse)
        spark = session(
            settings,
            "class-archive",
            one_shot=True,
            extra_config={
                **catalog_config(dataclasses.replace(settings, metastore_database="archive")),
                # The Hive metastore's client, on a database in memory (Derby's, which Spark
                # ships): what the shared catalog's first call loads, without its Postgres.
                "spark.hadoop.javax.jdo.option.ConnectionURL": "jdbc:derby:memory:classes;create=true",
                "spark.hadoop.javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
                "spark.hadoop.javax.jdo.option.ConnectionPassword": "",
                "spark.hadoop.datanucleus.schema.autoCreateAll": "true",
                "spark.hadoop.hive.metastore.schema.verification": "false",
                "spark.driver.extraJavaOptions": session_config(settings)["spark.driver.extraJavaOptions"]
                + f" -XX:ArchiveClassesAtExit={sys.argv[1]} -Xlog:cds*=off"
                + f" -Dderby.stream.error.file={warehouse}/derby.log",
            },
        )
        _exercise(spark, warehouse, settings)
        # The JVM writes the archive as it exits, which it does when its input closes.
        jvm = spark.sparkContext._gateway.proc
        spark.stop()
        jvm.stdin.close()
        jvm.wait()
