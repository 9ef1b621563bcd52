"""The jars Spark processes load, named once: their Maven coordinates, and where `make
install` puts those a process loads as files. lakehouse/spark.py and the JDBC server name
them; infra/native/jars.py fetches them. Versions follow infra/versions.env and the
installed PySpark.
"""

from __future__ import annotations

from pathlib import Path

import pyspark

from lakehouse.settings import read_versions

SCALA_BINARY = "2.12"
SPARK_LINE = ".".join(pyspark.__version__.split(".")[:2])


def hudi_bundle() -> str:
    return f"org.apache.hudi:hudi-spark{SPARK_LINE}-bundle_{SCALA_BINARY}:{read_versions()['HUDI_VERSION']}"


def kafka_connector() -> str:
    return f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY}:{pyspark.__version__}"


def hadoop_aws() -> str:
    """Hadoop's S3 connector, of the Hadoop release PySpark's client jars come from."""
    return f"org.apache.hadoop:hadoop-aws:{read_versions()['HADOOP_VERSION']}"


def pgjdbc() -> str:
    return f"org.postgresql:postgresql:{read_versions()['PGJDBC_VERSION']}"


def jar_file(coordinates: str, jars_dir: Path) -> Path:
    """Where `make install` puts one artifact's jar, without its dependencies."""
    _, artifact, version = coordinates.split(":")
    return jars_dir / f"{artifact}-{version}" / f"{artifact}-{version}.jar"
