"""The JDBC server (serving/jdbc.py) as a supervised background process."""

from __future__ import annotations

import sys

from infra import metastore
from infra.native.process import (
    BackgroundProcess,
    ensure_port_free,
    port_open,
    wait_until,
)
from lakehouse.settings import Settings


class NativeThriftServer:
    name = "thrift"
    # A cold start resolves the Spark packages from the Ivy cache and registers the catalog.
    startup_timeout = 180

    def __init__(self, settings: Settings):
        self.settings = settings
        # One per port: a test session runs its own beside the demo's, on the same state dir.
        self.process = BackgroundProcess(f"{self.name}-{settings.thrift_port}",
                                         settings.state_dir / "run", settings.state_dir / "logs")
        self.log = self.process.log

    @property
    def port(self) -> int:
        return self.settings.thrift_port

    def running(self) -> bool:
        return self.process.running()

    def start(self) -> None:
        if self.running():
            return
        ensure_port_free("The JDBC server", self.port, "THRIFT_PORT")
        # The server's only Postgres account is the metastore's: the catalog's database is
        # made here, by the caller that holds the superuser's password.
        metastore.ensure(self.settings)
        self.process.start([sys.executable, "-m", "serving.jdbc"], inherit_secrets=False,
                           env=self.settings.environment() | {
                               "METASTORE_PASSWORD": self.settings.metastore_password,
                               "ANALYST_PASSWORD": self.settings.analyst_password})
        wait_until(self.healthy, self.startup_timeout, f"{self.name} (log {self.log})", self.log,
                   alive=self.process.running)

    def stop(self) -> None:
        self.process.stop()

    def kill(self) -> None:
        self.process.kill()

    def healthy(self) -> bool:
        return port_open(self.settings.thrift_bind_host, self.port)
