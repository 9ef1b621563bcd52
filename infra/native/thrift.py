"""The JDBC server (serving/jdbc.py) as a supervised background process."""

from __future__ import annotations

import os
import pwd
import subprocess

from infra import metastore
from infra.native.process import (
    BackgroundProcess,
    ServiceError,
    ensure_port_free,
    port_open,
    wait_until,
)
from lakehouse.settings import Settings
from serving import jdbc


class NativeThriftServer:
    name = "thrift"
    startup_timeout = 180

    def __init__(self, settings: Settings):
        self.settings = settings
        # One per port: a test session runs its own beside the demo's, on the same state dir.
        self.process = BackgroundProcess(
            f"{self.name}-{settings.thrift_port}", settings.state_dir / "run", settings.state_dir / "logs"
        )
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
        user = self.os_user()
        jdbc.make_scratch_dir(self.settings, user)
        self.process.start(
            jdbc.command(self.settings), env=jdbc.environment(self.settings), inherit_secrets=False, user=user
        )
        wait_until(
            self.healthy,
            self.startup_timeout,
            f"{self.name} (log {self.log})",
            self.log,
            alive=self.process.running,
        )

    def os_user(self) -> str | None:
        """The account the server runs as. Started by root, an account of its own
        (THRIFT_OS_USER, made on the first start as the Debian package makes `postgres`): it
        reads the warehouse and the project's files, which are readable by all, and none of
        the secrets, which are their owner's only (.env, the Postgres data), and writes only
        its scratch directory (serving/jdbc.py). Started by anyone else, it runs as them."""
        if os.geteuid() != 0:
            return None
        name = self.settings.thrift_os_user
        try:
            pwd.getpwnam(name)
        except KeyError:
            created = subprocess.run(
                [
                    "useradd",
                    "--system",
                    "--user-group",
                    "--no-create-home",
                    "--home-dir",
                    "/nonexistent",
                    "--shell",
                    "/usr/sbin/nologin",
                    name,
                ],
                capture_output=True,
                text=True,
            )
            if created.returncode != 0:
                raise ServiceError(
                    f"could not create the JDBC server's OS account {name!r} "
                    f"(THRIFT_OS_USER): {created.stderr.strip()}"
                ) from None
        return name

    def stop(self) -> None:
        self.process.stop()

    def kill(self) -> None:
        self.process.kill()

    def healthy(self) -> bool:
        return port_open(self.settings.thrift_bind_host, self.port)
