"""The shared Hive metastore: its own database and role in the project's Postgres.

Every Spark process (pipeline, CLI, JDBC server, notebooks, benchmarks) connects Spark's
built-in Hive client (2.3.9) to this database, so all of them see one catalog at the same
time. The metastore's tables are created here, once, before any Spark process uses them.
Hive's own `schematool` needs SQL scripts that PySpark does not ship, and leaving the
creation to the Hive client (`datanucleus.schema.autoCreateAll`) deadlocks on Postgres: the
client adds a foreign key to TBLS from a second connection while its own open transaction
holds a lock on TBLS, at the first CREATE TABLE. DataNucleus' SchemaTool creates every table
of the metastore's model (`package.jdo` in the hive-metastore jar) in one step instead.
"""

from __future__ import annotations

import subprocess
import tempfile
import zipfile
from pathlib import Path

import psycopg
import pyspark
from psycopg import sql

from infra.native.jars import metastore_driver_jar
from infra.native.process import ServiceError
from ingestion import database
from lakehouse.settings import METASTORE_ROLE, Settings

# The schema version of Spark's built-in Hive client; the client checks it at start.
HIVE_SCHEMA_VERSION = "2.3.0"
SPARK_JARS = Path(pyspark.__file__).resolve().parent / "jars"
# Any constant serializes concurrent bootstraps (first starts of several processes).
_BOOTSTRAP_LOCK = 7_020_015


def ensure(settings: Settings) -> bool:
    """Creates the metastore's role, database and tables where missing; True when it created
    the tables. Idempotent and safe to call from several processes at once."""
    try:
        database.create_database(settings)
    except psycopg.OperationalError as error:
        raise ServiceError(
            f"The shared catalog (Hive metastore) lives in Postgres at {settings.pg_host}:"
            f"{settings.pg_port}, which does not answer: start the services (`make services`). "
            f"({str(error).strip().splitlines()[0]})"
        ) from None
    with database.connect(settings, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_BOOTSTRAP_LOCK,))
        try:
            role = sql.Identifier(METASTORE_ROLE)
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (METASTORE_ROLE,)).fetchone()
            # The password is set on every run so that .env stays the truth.
            conn.execute(
                sql.SQL("{} ROLE {} WITH LOGIN PASSWORD {}").format(
                    sql.SQL("ALTER" if exists else "CREATE"), role, sql.Literal(settings.metastore_password)
                )
            )
            if not conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (settings.metastore_database,)
            ).fetchone():
                conn.execute(
                    sql.SQL("CREATE DATABASE {} OWNER {}").format(
                        sql.Identifier(settings.metastore_database), role
                    )
                )
            with database.connect(settings, dbname=settings.metastore_database) as metastore:
                if metastore.execute("SELECT to_regclass('public.\"DBS\"')").fetchone()[0]:
                    return False
            _create_tables(settings)
            return True
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_BOOTSTRAP_LOCK,))


def _create_tables(settings: Settings) -> None:
    driver = metastore_driver_jar(settings.jars_dir)
    with tempfile.TemporaryDirectory() as work:
        model = Path(work) / "package.jdo"
        with zipfile.ZipFile(next(SPARK_JARS.glob("hive-metastore-*.jar"))) as jar:
            model.write_bytes(jar.read("package.jdo"))
        properties = Path(work) / "datanucleus.properties"
        properties.write_text(
            "\n".join(
                f"{key}={value}"
                for key, value in {
                    "javax.jdo.option.ConnectionURL": settings.metastore_jdbc_url,
                    "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
                    "javax.jdo.option.ConnectionUserName": METASTORE_ROLE,
                    "javax.jdo.option.ConnectionPassword": settings.metastore_password,
                    # Hive's naming of the tables DataNucleus derives (HiveConf's default).
                    "datanucleus.identifierFactory": "datanucleus1",
                    "datanucleus.schema.autoCreateAll": "true",
                }.items()
            )
            + "\n"
        )
        properties.chmod(0o600)
        result = subprocess.run(
            [
                "java",
                "-Xmx256m",
                "-cp",
                f"{SPARK_JARS}/*:{driver}",
                "org.datanucleus.store.schema.SchemaTool",
                "-create",
                "-api",
                "JDO",
                "-props",
                str(properties),
                str(model),
            ],
            capture_output=True,
            text=True,
        )
    if result.returncode != 0 or "completed successfully" not in result.stdout:
        raise ServiceError(
            f"Creating the Hive metastore's tables in database "
            f"{settings.metastore_database} failed:\n{result.stdout[-3000:]}"
            f"{result.stderr[-2000:]}"
        )
    with database.connect(
        settings,
        dbname=settings.metastore_database,
        user=METASTORE_ROLE,
        password=settings.metastore_password,
    ) as conn:
        conn.execute(
            'INSERT INTO "VERSION" ("VER_ID", "SCHEMA_VERSION", "VERSION_COMMENT") '
            "VALUES (1, %s, 'created by RetailMax infra/metastore.py')",
            (HIVE_SCHEMA_VERSION,),
        )


if __name__ == "__main__":
    from lakehouse.settings import load

    current = load()
    created = ensure(current)
    print(f"metastore database {current.metastore_database}: {'tables created' if created else 'ready'}")
