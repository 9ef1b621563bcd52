"""The JDBC/ODBC endpoint for BI tools: Spark's Thrift server (HiveThriftServer2) over the
shared catalog, with the Hudi extension and catalog of every other Spark process.

It is started in a session built by lakehouse/spark.py, so it runs with exactly the
configuration of the pipeline; each JDBC connection gets its own session from it. Run by
`make services` / `make up` (infra/native/thrift.py, or the `thrift` service in Docker
Compose) as `python -m serving.jdbc`.
"""

from __future__ import annotations

import dataclasses
import signal
import threading

from infra.native.jars import hudi_bundle_jar, metastore_driver_jar
from infra.native.thrift import NativeThriftServer
from lakehouse import catalog, spark
from lakehouse.settings import Settings, load


class ServerDown(RuntimeError):
    """The JDBC server does not answer; the message says how to start it."""


def jdbc_url(settings: Settings) -> str:
    return f"jdbc:hive2://localhost:{settings.thrift_port}/gold"


def connect(settings: Settings, user: str = "analyst"):
    """A DB-API connection to the server (impyla, HiveServer2 protocol). The server asks for
    no password: it listens on localhost only, unless THRIFT_BIND_HOST says otherwise."""
    from impala.dbapi import connect as hive_connect
    from impala.error import HiveServer2Error
    from thrift.transport.TTransport import TTransportException

    # The SASL PLAIN handshake the server speaks carries a password field; the server
    # ignores it (authentication NONE), so it is a placeholder, not a secret.
    try:
        return hive_connect(host="localhost", port=settings.thrift_port, auth_mechanism="PLAIN",
                            user=user, password="none", database="gold", timeout=30)
    except (TTransportException, HiveServer2Error, OSError) as error:
        raise ServerDown(f"the JDBC server at localhost:{settings.thrift_port} does not answer: "
                         f"start it with `make services` (or `make up`); its log is "
                         f"{NativeThriftServer(settings).log} ({error})") from None


def serve(settings: Settings) -> None:
    # The server keeps its heap small and leaves Spark's UI port (4040) to the pipeline.
    server_settings = dataclasses.replace(settings, driver_memory=settings.thrift_memory,
                                          spark_ui=False)
    driver_jars = [metastore_driver_jar(settings.state_dir), hudi_bundle_jar(settings.state_dir)]
    session = spark.session(server_settings, "jdbc-server", extra_config={
        "spark.driver.extraClassPath": ":".join(map(str, driver_jars)),
        "spark.hive.server2.thrift.port": str(settings.thrift_port),
        "spark.hive.server2.thrift.bind.host": settings.thrift_bind_host,
    })
    catalog.register(session, settings)
    session.sparkContext._jvm.org.apache.spark.sql.hive.thriftserver.HiveThriftServer2.startWithContext(
        session._jsparkSession.sqlContext())
    print(f"JDBC server listening on {jdbc_url(settings)}", flush=True)
    # Stopping sends SIGTERM to the whole process group (infra/native/process.py): the JVM's
    # own shutdown hooks stop Spark, and this process only has to return.
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    try:
        stopped.wait()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    serve(load())
