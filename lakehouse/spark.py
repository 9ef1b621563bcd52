"""The one place that builds a SparkSession: every job, test and notebook gets it here.

Spark line: Hudi 1.2.0 publishes its Spark bundle for Spark 3.5 (Scala 2.12) only, and the
pinned Great Expectations supports PySpark below 4.2, so PySpark is pinned to 3.5.7 in
pyproject.toml: the newest 3.5 release whose Kafka connector is published. The Hudi bundle
and the Kafka connector come through `spark.jars.packages`; their versions follow the
pinned Hudi version (infra/versions.env) and the installed PySpark. Ivy resolves them as
infra/spark/ivysettings.xml says (why not through ~/.m2 is written there); `make install`
starts one session so that the download happens then, and later sessions start from the
cache.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession

from lakehouse.settings import Settings, read_versions

IVY_SETTINGS = Path(__file__).resolve().parent.parent / "infra" / "spark" / "ivysettings.xml"

SCALA_BINARY = "2.12"
SPARK_LINE = ".".join(pyspark.__version__.split(".")[:2])


def spark_packages() -> list[str]:
    hudi = read_versions()["HUDI_VERSION"]
    return [
        f"org.apache.hudi:hudi-spark{SPARK_LINE}-bundle_{SCALA_BINARY}:{hudi}",
        f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY}:{pyspark.__version__}",
    ]


def session_config(settings: Settings) -> dict[str, str]:
    return {
        "spark.jars.packages": ",".join(spark_packages()),
        "spark.jars.ivySettings": str(IVY_SETTINGS),
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
        "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(settings.shuffle_partitions),
        "spark.sql.warehouse.dir": str(settings.state_dir / "spark-warehouse"),
        "spark.driver.memory": settings.driver_memory,
        "spark.ui.enabled": str(settings.spark_ui).lower(),
        # Progress bars are for terminals; jobs log to files and test output.
        "spark.ui.showConsoleProgress": "false",
        # Spark's own Derby metastore is not used: the catalog is rebuilt from the table
        # declarations in each session (lakehouse/catalog.py).
        "spark.sql.catalogImplementation": "in-memory",
    }


def session(settings: Settings, app_name: str = "retailmax") -> SparkSession:
    # PySpark turns naive Python datetimes into timestamps (and back, on collect) in the
    # process's time zone; with the process on UTC they mean what Spark's UTC session means,
    # whatever the host is set to (quality rules compare columns with "now").
    os.environ["TZ"] = "UTC"
    time.tzset()
    builder = SparkSession.builder.appName(app_name)
    # Under spark-submit the master comes from the submitter; SPARK_MASTER overrides it.
    master = os.environ.get("SPARK_MASTER")
    if master or "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master(master or "local[*]")
    for key, value in session_config(settings).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    # Hudi 1.2 answers a filter that fixes every record-key field from the record index, and
    # builds the lookup key for a DATE value in another format than the stored one:
    # `WHERE order_date = DATE'2025-06-01' AND product_category = ... AND region = ...` on
    # hudi_daily_sales_gold then returns nothing. Column statistics are off (see
    # lakehouse/tables.py), so the record index is all data skipping would use. A session
    # setting, not a Spark one: Spark's launcher drops `hoodie.*` keys.
    spark.conf.set("hoodie.enable.data.skipping", "false")
    spark.sparkContext.setLogLevel("WARN")
    return spark


if __name__ == "__main__":
    from lakehouse.settings import load

    session(load(), "fetch-packages").stop()
    print("spark packages ready: " + ", ".join(spark_packages()))
