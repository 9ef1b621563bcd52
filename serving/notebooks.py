"""What the notebooks in notebooks/ share: a Spark session on the shared catalog, and one
clear line (not a stack trace from deep inside Spark) when the stack is not up yet."""

from __future__ import annotations

from pyspark.sql import SparkSession

from lakehouse import catalog, spark
from lakehouse.network import port_open
from lakehouse.settings import Settings, load
from medallion.tables import declared_tables


class NotReady(RuntimeError):
    """The stack or a table is not there yet; the message says what to run."""


def open_lakehouse(app_name: str, *tables: str) -> tuple[SparkSession, Settings]:
    """A session over the shared catalog, once Postgres (which holds it) answers and every
    table in `tables` (qualified names) holds data."""
    settings = load()
    if not port_open(settings.pg_host, settings.pg_port):
        raise NotReady(
            f"The stack is not up: Postgres, which holds the shared catalog, does not "
            f"answer at {settings.pg_host}:{settings.pg_port}. Run `make up`, then run "
            f"this notebook again."
        )
    session = spark.session(settings, app_name)
    catalog.register(session, settings, declared_tables())
    missing = [name for name in tables if not session.catalog.tableExists(name)]
    if missing:
        raise NotReady(
            f"{', '.join(missing)} holds no data yet: `make up` builds every table "
            f"within a few minutes of starting (or run `lakehouse run`), then run "
            f"this notebook again."
        )
    return session, settings
