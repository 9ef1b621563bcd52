"""The JDBC/ODBC endpoint for BI tools: Spark's Thrift server (HiveThriftServer2) over the
shared catalog, with the Hudi extension and catalog of every other Spark process.

It is started in a session built by lakehouse/spark.py, so it runs with exactly the
configuration of the pipeline; each JDBC connection gets its own session from it. Analysts
sign in with the one analyst account (ANALYST_USER / ANALYST_PASSWORD in .env) and can only
read: serving/jvm/ holds the two Java classes that say what the server refuses and how. Run
by `make services` / `make up` (infra/native/thrift.py, or the `thrift` service in Docker
Compose) as `python -m serving.jdbc`.
"""

from __future__ import annotations

import dataclasses
import signal
import threading

from infra.native.jars import hudi_bundle_jar, metastore_driver_jar
from infra.native.thrift import NativeThriftServer
from lakehouse import catalog, spark
from lakehouse.jvm import project_jar
from lakehouse.settings import Settings, load


# serving/jvm/: Hive's custom sign-in, and the Spark check rule that refuses all but reading.
AUTHENTICATION_CLASS = "org.retailmax.serving.AnalystPassword"
READ_ONLY_EXTENSION = "org.retailmax.serving.ReadOnlyAnalysts"


class ServerDown(RuntimeError):
    """The JDBC server does not answer; the message says how to start it."""


class SignInRefused(RuntimeError):
    """The JDBC server refused the user name or password."""


def jdbc_url(settings: Settings) -> str:
    return f"jdbc:hive2://localhost:{settings.thrift_port}/gold"


def connect(settings: Settings, user: str | None = None, password: str | None = None):
    """A DB-API connection to the server (impyla, HiveServer2 protocol) as the analyst account
    of `settings`, or as `user` with `password`."""
    from impala.dbapi import connect as hive_connect
    from impala.error import HiveServer2Error
    from thrift.transport.TTransport import TTransportException

    try:
        return hive_connect(host="localhost", port=settings.thrift_port, auth_mechanism="PLAIN",
                            user=user or settings.analyst_user,
                            password=settings.analyst_password if password is None else password,
                            database="gold", timeout=30)
    except (TTransportException, HiveServer2Error, OSError) as error:
        if "Error validating the login" in str(error):
            raise SignInRefused(
                f"the JDBC server at localhost:{settings.thrift_port} refused user "
                f"{user or settings.analyst_user!r} and its password: the analyst account is "
                f"ANALYST_USER / ANALYST_PASSWORD in .env (`make status` shows it)") from None
        raise ServerDown(f"the JDBC server at localhost:{settings.thrift_port} does not answer: "
                         f"start it with `make services` (or `make up`); its log is "
                         f"{NativeThriftServer(settings).log} ({error})") from None


def server_config(settings: Settings) -> dict[str, str]:
    """What the server adds to every session's configuration: its port, the analyst sign-in,
    and the read-only guard (serving/jvm/) after Hudi's extension."""
    base = spark.session_config(settings)
    driver_jars = [metastore_driver_jar(settings.state_dir), hudi_bundle_jar(settings.state_dir),
                   project_jar(settings.state_dir)]
    return {
        "spark.driver.extraClassPath": ":".join(map(str, driver_jars)),
        "spark.sql.extensions": f"{base['spark.sql.extensions']},{READ_ONLY_EXTENSION}",
        "spark.hive.server2.thrift.port": str(settings.thrift_port),
        "spark.hive.server2.thrift.bind.host": settings.thrift_bind_host,
        "spark.hive.server2.authentication": "CUSTOM",
        # The sign-in reads a HiveConf of its own, which sees system properties but not
        # Spark's configuration.
        "spark.driver.extraJavaOptions":
            f"-Dhive.server2.custom.authentication.class={AUTHENTICATION_CLASS}",
        # `SELECT * FROM text.`file:///...`` would read any file the server can.
        "spark.sql.runSQLOnFiles": "false",
    }


def serve(settings: Settings) -> None:
    """Runs the server until SIGTERM. The shared catalog's database must exist: whoever starts
    the server makes sure of it (infra/native/thrift.py; Compose's `metastore` service), as
    the server has no Postgres account but the metastore's."""
    # The server keeps its heap small and leaves Spark's UI port (4040) to the pipeline.
    server_settings = dataclasses.replace(settings, driver_memory=settings.thrift_memory,
                                          spark_ui=False)
    session = spark.session(server_settings, "jdbc-server", extra_config=server_config(settings))
    catalog.register(session, settings)
    # Registering is DDL; from here on, every statement is an analyst's, and only reads.
    session.sparkContext._jvm.org.retailmax.serving.ReadOnlyAnalysts.arm()
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
