"""The JDBC/ODBC endpoint for BI tools: Spark's Thrift server (HiveThriftServer2) over the
shared catalog, with the Hudi extension and catalog of every other Spark process.

The server is a JVM of its own, started by spark-submit with the pipeline's Spark
configuration (lakehouse/spark.py) and the server's (`server_config`); each JDBC connection
gets its own session in it. Analysts sign in with the one analyst account (ANALYST_USER /
ANALYST_PASSWORD in .env) and can only read: serving/jvm/ holds the Java classes that say
what the server refuses, how it signs in, and its entry point. Started by `make services` /
`make up` (infra/native/thrift.py, as an OS account of its own, or the `thrift` service of
Docker Compose, as `python -m serving.jdbc`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyspark

from lakehouse import artifacts, spark
from lakehouse.jvm import project_jar
from lakehouse.settings import Settings

# serving/jvm/: Hive's custom sign-in, and the Spark check rule that refuses all but reading.
AUTHENTICATION_CLASS = "org.retailmax.serving.AnalystPassword"
READ_ONLY_EXTENSION = "org.retailmax.serving.ReadOnlyAnalysts"
MAIN_CLASS = "org.retailmax.serving.JdbcServer"
# Where Hive's sessions write, under the server's scratch directory (`make_scratch_dir`).
HIVE_DIRS = {
    "hive.exec.scratchdir": "hive",
    "hive.exec.local.scratchdir": "local",
    "hive.downloaded.resources.dir": "resources",
    "hive.server2.logging.operation.log.location": "operation_logs",
}
SPARK_SUBMIT = Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"


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
        return hive_connect(
            host="localhost",
            port=settings.thrift_port,
            auth_mechanism="PLAIN",
            user=user or settings.analyst_user,
            password=settings.analyst_password if password is None else password,
            database="gold",
            timeout=30,
        )
    except (TTransportException, HiveServer2Error, OSError) as error:
        if "Error validating the login" in str(error):
            raise SignInRefused(
                f"the JDBC server at localhost:{settings.thrift_port} refused user "
                f"{user or settings.analyst_user!r} and its password: the analyst account is "
                f"ANALYST_USER / ANALYST_PASSWORD in .env (`make status` shows it)"
            ) from None
        raise ServerDown(
            f"the JDBC server at localhost:{settings.thrift_port} does not answer: "
            f"start it with `make services` (or `make up`); its log is "
            f"in {settings.state_dir / 'logs'} ({error})"
        ) from None


def scratch_dir(settings: Settings) -> Path:
    return settings.state_dir / "run" / f"jdbc-{settings.thrift_port}"


def make_scratch_dir(settings: Settings, owner: str | None = None) -> None:
    """Makes the server's working space (Hive's scratch and operation logs) anew, its OS
    account's alone: `owner`'s, or the caller's."""
    scratch = scratch_dir(settings)
    shutil.rmtree(scratch, ignore_errors=True)
    for directory in (scratch, *(scratch / name for name in HIVE_DIRS.values())):
        directory.mkdir(mode=0o700, parents=True)
        if owner:
            shutil.chown(directory, owner, owner)


def server_config(settings: Settings) -> dict[str, str]:
    """The server's Spark configuration: every session's (lakehouse/spark.py), and its own:
    its port, the analyst sign-in, the read-only guard after Hudi's extension, its jars and
    scratch space in places its OS account can use."""
    base = spark.session_config(settings)
    hudi = spark.installed_jar(artifacts.hudi_bundle(), settings)
    project = project_jar(settings.jars_dir)
    scratch = scratch_dir(settings)
    return (
        base
        | spark.LOCAL_DRIVER
        | {
            "spark.app.name": "jdbc-server",
            "spark.driver.memory": settings.thrift_memory,
            # Spark's UI port (4040) is left to the pipeline.
            "spark.ui.enabled": "false",
            # The jars it needs, as files `make install` made: resolving packages would write to
            # an Ivy cache, which belongs to whoever installed the project.
            "spark.jars.packages": "",
            "spark.jars": f"{hudi},{project}",
            "spark.driver.extraClassPath": ":".join(
                map(str, [spark.installed_jar(artifacts.pgjdbc(), settings), hudi, project])
            ),
            # Hive's sign-in and sessions read a HiveConf of their own, which sees Java's system
            # properties but not Spark's configuration.
            "spark.driver.extraJavaOptions": " ".join(
                [base["spark.driver.extraJavaOptions"]]
                + [f"-Dhive.server2.custom.authentication.class={AUTHENTICATION_CLASS}"]
                + [f"-D{key}={scratch / name}" for key, name in HIVE_DIRS.items()]
            ),
            "spark.sql.extensions": f"{base['spark.sql.extensions']},{READ_ONLY_EXTENSION}",
            "spark.hive.server2.thrift.port": str(settings.thrift_port),
            "spark.hive.server2.thrift.bind.host": settings.thrift_bind_host,
            "spark.hive.server2.authentication": "CUSTOM",
            # `SELECT * FROM text.`file:///...`` would read any file the server can.
            "spark.sql.runSQLOnFiles": "false",
        }
    )


def command(settings: Settings) -> list[str]:
    """The server's command line: spark-submit runs serving/jvm/JdbcServer.java with
    `server_config`. spark-submit keeps only `spark.*` keys: the others (Hudi's) are the entry
    point's arguments, which it sets as PySpark's builder would."""
    config = server_config(settings)
    spark_keys = [
        argument
        for key, value in config.items()
        if key.startswith("spark.")
        for argument in ("--conf", f"{key}={value}")
    ]
    other_keys = [f"{key}={value}" for key, value in config.items() if not key.startswith("spark.")]
    return [
        str(SPARK_SUBMIT),
        *spark_keys,
        "--class",
        MAIN_CLASS,
        str(project_jar(settings.jars_dir)),
        *other_keys,
    ]


def environment(settings: Settings) -> dict[str, str]:
    """What the server needs in its environment: the analyst account, the passwords its
    configuration names but never holds, UTC, and the address its UI would listen on."""
    return {
        "ANALYST_USER": settings.analyst_user,
        "METASTORE_PASSWORD": settings.metastore_password,
        "ANALYST_PASSWORD": settings.analyst_password,
        "TZ": "UTC",
        "SPARK_LOCAL_IP": spark.LOOPBACK,
    }
