"""The JDBC server (serving/jdbc.py) as a supervised background process."""

from __future__ import annotations

import os
import pwd
import subprocess

from infra.native.process import ServiceError, SupervisedService
from lakehouse.network import port_open
from lakehouse.settings import Settings
from serving import jdbc


class NativeThriftServer(SupervisedService):
    name = "thrift"
    startup_timeout = 180
    # The server's environment names the two passwords it needs (serving/jdbc.py).
    inherit_secrets = False

    def __init__(self, settings: Settings):
        # One per port: a test session runs its own beside the demo's, on the same state dir.
        super().__init__(settings, process_name=f"{self.name}-{settings.thrift_port}")

    @property
    def port(self) -> int:
        return self.settings.thrift_port

    def ports(self) -> list[tuple[str, int, str]]:
        return [("The JDBC server", self.port, "THRIFT_PORT")]

    def setup(self) -> None:
        # The server's only Postgres account is the metastore's: the catalog's database is
        # made before, by the caller that holds the superuser's password (infra/stack.py).
        jdbc.make_scratch_dir(self.settings, self.os_user())

    def command(self) -> list[str]:
        return jdbc.command(self.settings)

    def environment(self) -> dict[str, str]:
        return jdbc.environment(self.settings)

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

    def healthy(self) -> bool:
        return port_open(self.settings.thrift_bind_host, self.port)
