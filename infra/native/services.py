"""The services of the stack, as native processes: each started, stopped and killed by name,
in the native mode (infra/stack.py) and as a container's main process (infra/serve.py)."""

from __future__ import annotations

from infra.native.kafka import NativeConnect, NativeKafka
from infra.native.postgres import NativePostgres
from infra.native.process import NativeService
from infra.native.thrift import NativeThriftServer
from lakehouse.settings import Settings


def native_services(settings: Settings) -> list[NativeService]:
    """In start order: Postgres first, since the JDBC server's catalog database is made in it
    before that server starts (infra/stack.py)."""
    return [
        NativePostgres(settings),
        NativeKafka(settings),
        NativeConnect(settings),
        NativeThriftServer(settings),
    ]
