"""Starting, watching and stopping one background service process, and the lifecycle every
native service shares over it.

Each service (infra/native/) says only what is its own: its ports, its setup, its command
line and environment, its health probe. Skipping a running service, refusing a taken port,
waiting for health with the log's tail on failure, stopping and killing are here, once.
"""

# Why one module: the process primitives (pid files, process groups, ports) and the service
# lifecycle over them are used together by every service; apart, each half would be read
# with the other open.

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path

from lakehouse.network import port_open
from lakehouse.settings import SECRET_VARIABLES, Settings


class ServiceError(RuntimeError):
    """A service could not be started or is unhealthy; the message says what to fix."""


def ensure_port_free(name: str, port: int, variable: str) -> None:
    if port_open("localhost", port):
        raise ServiceError(
            f"{name} cannot start: port {port} is already in use by another process. "
            f"Stop that process (`ss -ltnp 'sport = :{port}'` shows it) or set {variable} "
            f"to a free port."
        )


def tail(path: Path, lines: int = 30) -> str:
    if not path.exists():
        return f"(no log at {path})"
    text = path.read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:])


def wait_until(
    check: Callable[[], bool],
    timeout: float,
    what: str,
    log: Path | None,
    alive: Callable[[], bool] = lambda: True,
) -> None:
    """Polls `check` until it is true; on timeout or early death, fails with the log's tail."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if not alive():
            break
        time.sleep(0.5)
    reason = "exited" if not alive() else f"did not become healthy within {timeout:.0f} s"
    log_part = f"\nLast lines of {log}:\n{tail(log)}" if log else ""
    raise ServiceError(f"{what} {reason}.{log_part}")


def _alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (exited, not yet reaped) counts as gone."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    if state == "Z":
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        return False
    return True


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def kill_all(pids: list[int], timeout: float = 30) -> None:
    """SIGKILLs every pid at once and waits until all are gone."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)


def group_alive(pgid: int) -> bool:
    """Whether a live (not zombie) process of process group `pgid` remains."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def inherited_environment(inherit_secrets: bool) -> dict[str, str]:
    """This process's environment as a service it starts gets it: without `inherit_secrets`,
    none of the project's secrets."""
    return {
        name: value for name, value in os.environ.items() if inherit_secrets or name not in SECRET_VARIABLES
    }


class BackgroundProcess:
    """A long-running process detached from the caller, tracked by a pid file."""

    def __init__(self, name: str, run_dir: Path, log_dir: Path):
        self.name = name
        self.pid_file = run_dir / f"{name}.pid"
        self.log = log_dir / f"{name}.log"

    def _recorded_pid(self) -> int | None:
        """The pid the pid file names, running or not; None without a readable one (stopped,
        or a start writing it now)."""
        try:
            return int(self.pid_file.read_text())
        except (FileNotFoundError, ValueError):
            return None

    @property
    def pid(self) -> int | None:
        pid = self._recorded_pid()
        return pid if pid is not None and _alive(pid) else None

    def running(self) -> bool:
        return self.pid is not None

    def exited(self) -> bool:
        """Whether the process ended without being stopped: its pid file, which `stop`
        removes first, still names it, and it no longer runs. Read once, so that a stop
        under way is never taken for an exit."""
        pid = self._recorded_pid()
        return pid is not None and not _alive(pid)

    def start(
        self,
        command: list[str],
        env: dict[str, str] | None = None,
        inherit_secrets: bool = True,
        user: str | None = None,
    ) -> None:
        """Starts `command` with this process's environment and `env`; without
        `inherit_secrets`, none of the project's secrets but those `env` names; with `user`,
        as that OS account, in its own group only (the caller must be root)."""
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        inherited = inherited_environment(inherit_secrets)
        with self.log.open("ab") as log:
            process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**inherited, **(env or {})},
                start_new_session=True,
                **({"user": user, "group": pwd.getpwnam(user).pw_gid, "extra_groups": []} if user else {}),
            )
        self.pid_file.write_text(str(process.pid))

    def stop(self, timeout: float = 30) -> None:
        """Stops the process and the children it started (its process group), returning
        when none of them runs. The pid file goes first: a supervisor that found it naming
        a process already gone would take the stop for an exit, and start the process again
        (`workers.supervise_once`)."""
        pid = self.pid
        self.pid_file.unlink(missing_ok=True)
        if pid is None:
            return
        _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _group_runs(pid):
            time.sleep(0.2)
        if _group_runs(pid):
            _signal_group(pid, signal.SIGKILL)
            while _group_runs(pid):
                time.sleep(0.1)

    def kill(self) -> None:
        """Stops the process and its children at once, as a crash would (for tests of
        recovery); returns when none of them runs, so none can write after it returns."""
        pid = self.pid
        if pid is not None:
            _signal_group(pid, signal.SIGKILL)
            while _group_runs(pid):
                time.sleep(0.1)
        # Unless a supervisor has started it again meanwhile, under a pid of its own.
        if self.pid is None:
            self.pid_file.unlink(missing_ok=True)


def _group_runs(pid: int) -> bool:
    """Whether the process `pid` or any of its process group still runs."""
    return _alive(pid) or group_alive(pid)


def _signal_group(pid: int, signal_number: int) -> None:
    try:
        os.killpg(pid, signal_number)
    except ProcessLookupError:  # the whole group ended meanwhile
        pass


class NativeService(ABC):
    """One service of the native mode, started, stopped and killed by name (infra/stack.py,
    infra/native/cluster.py)."""

    name: str

    def __init__(self, settings: Settings):
        self.settings = settings

    def start(self) -> None:
        """Starts the service unless it runs, returning once it is healthy."""
        if self.running():
            return
        self.prepare()
        self.launch()

    def prepare(self) -> None:
        """Refuses a port another process holds (the message says which and how to move it;
        the service would only die with a bind error in its log), then does its setup."""
        for who, port, variable in self.ports():
            ensure_port_free(who, port, variable)
        self.setup()

    @abstractmethod
    def ports(self) -> list[tuple[str, int, str]]:
        """The ports it listens on, each as (who listens, port, the variable that moves it)."""

    def setup(self) -> None:  # noqa: B027 - optional: most services have none
        """Work of its own before each start: configuration files, storage on the first."""

    @abstractmethod
    def launch(self) -> None:
        """Starts the process, returning once it is healthy."""

    @abstractmethod
    def run_in_foreground(self) -> None:
        """Becomes the service, in place of this process (a container's main process,
        docker-compose.yml): the same setup, command and settings as `start`."""

    @abstractmethod
    def running(self) -> bool: ...

    @abstractmethod
    def healthy(self) -> bool: ...

    @abstractmethod
    def stop(self) -> None: ...

    @abstractmethod
    def kill(self) -> None:
        """Kills the service and what it started at once, as a crash or a lost machine would
        (for tests of recovery)."""


class SupervisedService(NativeService):
    """A native service that is one BackgroundProcess: pid file `<state dir>/run/<process
    name>.pid`, log `<state dir>/logs/<process name>.log`, the process named as the service
    unless it says otherwise."""

    startup_timeout: float
    # False: the process gets none of the project's secrets but those `environment` names.
    inherit_secrets = True

    def __init__(self, settings: Settings, process_name: str | None = None):
        super().__init__(settings)
        self.process = BackgroundProcess(
            process_name or self.name, settings.state_dir / "run", settings.state_dir / "logs"
        )
        self.log = self.process.log

    @abstractmethod
    def command(self) -> list[str]: ...

    def environment(self) -> dict[str, str]:
        return {}

    def os_user(self) -> str | None:
        """The OS account it runs as; None: whoever starts it."""
        return None

    def run_in_foreground(self) -> None:
        self.prepare()
        command = self.command()
        os.execvpe(command[0], command, {**inherited_environment(self.inherit_secrets), **self.environment()})

    def launch(self) -> None:
        self.process.start(
            self.command(), env=self.environment(), inherit_secrets=self.inherit_secrets, user=self.os_user()
        )
        wait_until(
            self.healthy,
            self.startup_timeout,
            f"{self.name} (log {self.log})",
            self.log,
            alive=self.process.running,
        )

    def running(self) -> bool:
        return self.process.running()

    def stop(self) -> None:
        self.process.stop()

    def kill(self) -> None:
        self.process.kill()
