# The project's own image, for the services that are Spark processes (the JDBC server, the
# cluster profile's Spark master and workers) and the project's pages:
# Python, a JDK (the project's Java classes are compiled by lakehouse/jvm.py), PySpark and
# the lakehouse package, with every jar fetched and compiled at build time.
# Built by `docker compose build` (or `up`) from the repository root.
FROM python:3.11-slim-bookworm
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
       openjdk-17-jdk-headless maven \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/retailmax
COPY . .
RUN pip install --no-cache-dir -q -e . \
    && python -c "from infra.native.jars import hudi_bundle_jar, metastore_driver_jar; \
from pathlib import Path; [f(Path('.lake/jars')) for f in (hudi_bundle_jar, metastore_driver_jar)]" \
    && python -m lakehouse.jvm \
    && SPARK_UI=false python -m lakehouse.spark
# The JDBC server's account (docker-compose.yml's `thrift` runs as it): it may write its
# scratch directory under .lake/run, and nothing else.
RUN useradd --system --user-group --no-create-home --shell /usr/sbin/nologin retailmax-jdbc \
    && mkdir -p .lake/run && chown retailmax-jdbc:retailmax-jdbc .lake/run
ENV TZ=UTC
