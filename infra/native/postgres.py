"""PostgreSQL from Debian's `postgresql` package, as a cluster under `.lake/postgres/`.

PostgreSQL refuses to run as root, and these machines run as root: the cluster belongs to
the `postgres` system user that the Debian package creates, and every server command runs
as that user. The database superuser is `$PGUSER` (as POSTGRES_USER in Docker Compose).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from infra.native.process import NativeService, ServiceError, children, kill_all, tail
from lakehouse.network import port_open
from lakehouse.settings import Settings

SERVER_OPTIONS = {
    "wal_level": "logical",
    "max_wal_senders": "10",
    "max_replication_slots": "10",
    # The slot holds the WAL while Debezium is away; past this much, PostgreSQL invalidates
    # the slot rather than fill the disk, and the connector must snapshot again. About five
    # days at the demo's load of 33 MiB of WAL an hour (docs/architecture.md, "Durability").
    "max_slot_wal_keep_size": "4GB",
    "listen_addresses": "localhost",
    # Sized for a 2-core, 24 GiB host that also runs Kafka, Connect and Spark.
    "shared_buffers": "256MB",
    "max_connections": "100",
    "timezone": "UTC",
    "log_timezone": "UTC",
}


def _bin_dir() -> Path:
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), reverse=True)
    if not candidates:
        raise ServiceError(
            "PostgreSQL server binaries not found under /usr/lib/postgresql: "
            "run `make install` (or `apt-get install postgresql`)."
        )
    return candidates[0].parent


def _as_postgres(*command: str, check: bool = True) -> subprocess.CompletedProcess:
    if os.geteuid() == 0:
        command = ("runuser", "-u", "postgres", "--", *command)
    result = subprocess.run(command, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise ServiceError(f"`{' '.join(command)}` failed:\n{result.stdout}{result.stderr}")
    return result


class NativePostgres(NativeService):
    """Not a BackgroundProcess: pg_ctl starts the postmaster detached, waits until it is
    ready and stops it, and the postmaster keeps its own pid file (postmaster.pid, which
    `kill` reads)."""

    name = "postgres"

    def __init__(self, settings: Settings):
        super().__init__(settings)
        self.home = settings.state_dir / "postgres"
        self.data = self.home / "data"
        self.sockets = self.home / "run"
        self.log = settings.state_dir / "logs" / "postgres.log"
        self.port = settings.pg_port

    def _own(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(path, "postgres", "postgres")

    def _initdb(self) -> None:
        self._own(self.home)
        self._own(self.data)
        self._own(self.sockets)
        self._own(self.log.parent)
        password_file = self.home / "initdb.pw"
        password_file.write_text(self.settings.pg_password + "\n")
        try:
            if os.geteuid() == 0:
                shutil.chown(password_file, "postgres", "postgres")
            _as_postgres(
                str(_bin_dir() / "initdb"),
                "-D",
                str(self.data),
                "-U",
                self.settings.pg_user,
                f"--pwfile={password_file}",
                "--auth-local=peer",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C.UTF-8",
            )
        finally:
            password_file.unlink(missing_ok=True)
        with (self.data / "pg_hba.conf").open("a") as hba:
            # Debezium's role streams the WAL over a replication connection.
            hba.write(
                "host replication all 127.0.0.1/32 scram-sha-256\n"
                "host replication all ::1/128 scram-sha-256\n"
            )

    def running(self) -> bool:
        if not (self.data / "PG_VERSION").exists():
            return False
        return (
            _as_postgres(str(_bin_dir() / "pg_ctl"), "-D", str(self.data), "status", check=False).returncode
            == 0
        )

    def ports(self) -> list[tuple[str, int, str]]:
        return [("PostgreSQL", self.port, "PGPORT")]

    def setup(self) -> None:
        if not (self.data / "PG_VERSION").exists():
            self._initdb()

    def _options(self) -> dict[str, str]:
        return {**SERVER_OPTIONS, "port": str(self.port), "unix_socket_directories": str(self.sockets)}

    def run_in_foreground(self) -> None:
        # Run as `postgres` in its container: the server's log goes to the container's.
        self.prepare()
        options = [f"--{key}={value}" for key, value in self._options().items()]
        command = [str(_bin_dir() / "postgres"), "-D", str(self.data), *options]
        os.execv(command[0], command)

    def launch(self) -> None:
        result = _as_postgres(
            str(_bin_dir() / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-w",
            "-t",
            "60",
            "-o",
            " ".join(f"-c {key}={value}" for key, value in self._options().items()),
            "start",
            check=False,
        )
        if result.returncode != 0:
            raise ServiceError(
                f"PostgreSQL did not start:\n{result.stdout}{result.stderr}\n"
                f"Last lines of {self.log}:\n{tail(self.log)}"
            )

    def stop(self) -> None:
        if self.running():
            _as_postgres(str(_bin_dir() / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def kill(self) -> None:
        """Kills the server and its backends at once, as a crash or `docker kill` would; the
        next start runs crash recovery from the WAL."""
        try:
            postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        except (FileNotFoundError, IndexError, ValueError):
            return
        kill_all([postmaster, *children(postmaster)])
        # The server is dead, but until its parent (often PID 1) reaps it, its zombie makes
        # pg_ctl and the next postmaster take the lock files for a running server's.
        (self.data / "postmaster.pid").unlink(missing_ok=True)
        (self.sockets / f".s.PGSQL.{self.port}.lock").unlink(missing_ok=True)

    def healthy(self) -> bool:
        return port_open("localhost", self.port)
