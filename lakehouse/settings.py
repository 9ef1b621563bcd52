"""Settings from the environment, with defaults for the local demo.

Each setting is declared once, as a field of `Settings`: its variable, its default, what it
accepts and what it is for. `load()`, `Settings.environment()` and the settings page of the
documentation (docs/gen_reference.py) are all derived from those declarations.

Secrets are never defaulted: they come from the environment or from the untracked
`.env` file that `lakehouse env` writes once with random values. A missing secret fails
at start with a message naming the variable.
"""

# Why one module over 300 lines: it is the one place every setting is declared, each with a
# line of documentation; variables, defaults and checks spelled again in `load()`,
# `environment()` and the docs had drifted apart (issue 31's `duplicates` finding).

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any

ENV_FILE = Path(".env")


@dataclass(frozen=True)
class PgRole:
    """A Postgres role of the project, which connects with the password in `password_variable`."""

    name: str
    password_variable: str


# One role per purpose, created with what each may do by ingestion/database.py. The owner
# (PGUSER) only sets up: schema, roles, the metastore's database.
SOURCE_WRITER = PgRole("source_writer", "SOURCE_WRITER_PASSWORD")  # the simulator, the seed
LAKEHOUSE_READER = PgRole("lakehouse_reader", "LAKEHOUSE_READER_PASSWORD")  # schema checks, status
ERASER = PgRole("eraser", "ERASER_PASSWORD")  # `lakehouse erase`: the personal columns only
PG_ROLES = (SOURCE_WRITER, LAKEHOUSE_READER, ERASER)
SECRET_VARIABLES = (
    "PGPASSWORD",
    "DEBEZIUM_PASSWORD",
    "METASTORE_PASSWORD",
    "MINIO_ROOT_PASSWORD",
    "ANALYST_PASSWORD",
    *(role.password_variable for role in PG_ROLES),
)
# The Postgres role that owns the Hive metastore's database (infra/metastore.py).
METASTORE_ROLE = "metastore"


class ConfigurationError(RuntimeError):
    """A setting is missing or wrong; the message says what to fix."""


def read_env_file(path: Path = ENV_FILE) -> dict[str, str]:
    """The `KEY=value` lines of `path` (none if it does not exist)."""
    if not path.exists():
        return {}
    found = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip().isidentifier():
            raise ConfigurationError(f"{path}:{number}: expected KEY=value, got {line!r}")
        found[key.strip()] = value.strip().strip('"').strip("'")
    return found


def load_env_file(path: Path = ENV_FILE) -> None:
    """Adds the `KEY=value` lines of `path` to os.environ; the real environment wins."""
    for key, value in read_env_file(path).items():
        os.environ.setdefault(key, value)


def write_env_file(path: Path = ENV_FILE) -> list[str]:
    """Creates `path` with random secrets for the variables it lacks; returns their names.
    The file is readable by its owner only: a new one is written so from its first byte
    (beside it, then renamed into place), and one found readable by others is tightened."""
    existing = path.read_text() if path.exists() else ""
    present = {line.partition("=")[0].strip() for line in existing.splitlines()}
    missing = [name for name in SECRET_VARIABLES if name not in present]
    if missing:
        lines = [f"{name}={secrets.token_urlsafe(18)}" for name in missing]
        header = "" if existing else "# Local secrets for the RetailMax demo; never commit this file.\n"
        separator = "" if not existing or existing.endswith("\n") else "\n"
        staged = path.with_name(f".{path.name}.{os.getpid()}")
        descriptor = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(existing + separator + header + "\n".join(lines) + "\n")
        os.replace(staged, path)
    elif path.exists() and path.stat().st_mode & 0o077:
        path.chmod(0o600)
    return missing


def read_versions(path: Path | None = None) -> dict[str, str]:
    """The pinned service versions of infra/versions.env."""
    path = path or resources.files("infra") / "versions.env"
    versions = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            versions[key.strip()] = value.strip()
    return versions


def _require(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise ConfigurationError(
            f"{name} is not set. Run `make env` (writes random local secrets to .env) "
            f"or export {name} in the environment."
        )
    return value


@dataclass(frozen=True)
class Kind:
    """What a variable may hold: `accepts` in the docs' words; `complaint` follows `NAME='value'`
    in the error when `valid` refuses the text, and may quote the setting's `{default}`."""

    accepts: str
    convert: Callable[[str], Any] = str
    valid: Callable[[str], bool] = lambda raw: True
    complaint: str = ""


def _is_date(raw: str) -> bool:
    try:
        return bool(date.fromisoformat(raw))
    except ValueError:
        return False


TEXT = Kind("text")
PATH = Kind("a path", lambda raw: Path(raw).resolve())
# A local path is made absolute, so that every process finds the same tables whatever folder
# it starts in.
LOCATION = Kind(
    "a path, or an `hdfs://` or `s3a://` URI", lambda raw: raw if "://" in raw else str(Path(raw).resolve())
)
SWITCH = Kind(
    "on when one of `1`, `true`, `yes` (any case), else off", lambda raw: raw.lower() in ("1", "true", "yes")
)
PORT = Kind(
    "a TCP port, 1-65535",
    int,
    lambda raw: raw.isdigit() and 0 < int(raw) < 65536,
    "is not a TCP port number (1-65535)",
)
POSITIVE = Kind(
    "a whole number, at least 1",
    int,
    lambda raw: raw.isdigit() and int(raw) >= 1,
    "must be a whole number of at least 1",
)
COUNT = Kind("a whole number, 0 or more", int, str.isdigit, "must be a whole number (0 or more)")
DATE = Kind("a date, YYYY-MM-DD", str, _is_date, "is not a date (YYYY-MM-DD)")
CRON = Kind(
    "a cron expression of five fields",
    str,
    lambda raw: len(raw.split()) == 5,
    "must be a cron expression of five fields (minute hour day month weekday), e.g. {default!r}",
)
HOST_PORT = Kind(
    "host:port",
    str,
    lambda raw: ":" in raw and raw.rpartition(":")[2].isdigit(),
    "must look like host:port, e.g. {default}",
)
HTTP_URL = Kind(
    "http://host:port",
    lambda raw: raw.rstrip("/"),
    lambda raw: raw.startswith("http") and raw.rstrip("/").rsplit(":", 1)[-1].isdigit(),
    "must look like http://host:port",
)
OS_ACCOUNT = Kind(
    "an OS account other than root",
    str,
    lambda raw: raw != "root" and bool(re.fullmatch(r"[a-z_][a-z0-9_-]{0,31}", raw)),
    "must name an OS account other than root (lower-case letters, digits, '_' and '-')",
)


def render(value: Any) -> str:
    """A setting's value as its variable spells it."""
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class Setting:
    """One setting's declaration. A default may name variables declared before it, as
    `${LAKEHOUSE_STATE_DIR}/warehouse`: it is then derived from their values."""

    variable: str
    default: Any
    kind: Kind
    doc: str

    def read(self, known: dict[str, str]) -> Any:
        """The variable's value, checked and converted; without the variable, the default,
        with the `known` values of the variables it names."""
        raw = os.environ.get(self.variable)
        if raw is None:
            # rstrip: `${LAKEHOUSE_WAREHOUSE}/_checkpoints` of `s3a://lake/` is
            # `s3a://lake/_checkpoints`.
            raw = re.sub(r"\$\{(\w+)\}", lambda m: known[m[1]].rstrip("/"), render(self.default))
        if not self.kind.valid(raw):
            complaint = self.kind.complaint.format(default=render(self.default))
            raise ConfigurationError(f"{self.variable}={raw!r} {complaint}")
        return self.kind.convert(raw)


def setting(variable: str, default: Any, kind: Kind, doc: str) -> Any:
    """A field of `Settings`, read from `variable`. A derived default is no default of
    `Settings(...)`: the caller says what it derives from."""
    metadata = {"setting": Setting(variable, default, kind, doc)}
    if isinstance(default, str) and "${" in default:
        return field(metadata=metadata)
    return field(default=default, metadata=metadata)


# Keyword-only, as the fields with a derived default have none among those that do.
@dataclass(frozen=True, kw_only=True)
class Settings:
    # `load()` reads them in this order, so a derived default comes after what it names.
    state_dir: Path = setting(
        "LAKEHOUSE_STATE_DIR",
        Path(".lake"),
        PATH,
        "What the demo makes and keeps (jars, services' data, logs, by default the warehouse); "
        "another folder keeps two checkouts' demos apart.",
    )
    jars_dir: Path = setting(
        "LAKEHOUSE_JARS_DIR",
        "${LAKEHOUSE_STATE_DIR}/jars",
        PATH,
        "The jars `make install` fetches and builds (Kafka, Debezium, Hudi, drivers, the "
        "project's classes); the test session uses the demo's.",
    )
    pg_host: str = setting(
        "PGHOST",
        "localhost",
        TEXT,
        "Where Postgres runs, holding the shop's source database and the metastore's.",
    )
    pg_port: int = setting(
        "PGPORT", 5432, PORT, "Postgres's port; another one when 5432 is taken on this machine."
    )
    pg_user: str = setting(
        "PGUSER",
        "retailmax",
        TEXT,
        "The Postgres role that sets up the schema, the other roles and the metastore's database.",
    )
    pg_database: str = setting(
        "PGDATABASE", "retailmax", TEXT, "The shop's database, whose tables Debezium captures into Kafka."
    )
    kafka_bootstrap: str = setting(
        "KAFKA_BOOTSTRAP_SERVERS",
        "localhost:9092",
        HOST_PORT,
        "The Kafka broker Debezium and the simulator write to and Bronze reads.",
    )
    connect_url: str = setting(
        "CONNECT_URL",
        "http://localhost:8083",
        HTTP_URL,
        "Kafka Connect's REST API, where the Debezium connector is registered.",
    )
    warehouse: str = setting(
        "LAKEHOUSE_WAREHOUSE",
        "${LAKEHOUSE_STATE_DIR}/warehouse",
        LOCATION,
        "Where the tables live: a local folder, or the HDFS or S3 storage a cluster shares.",
    )
    checkpoints: str = setting(
        "LAKEHOUSE_CHECKPOINTS",
        "${LAKEHOUSE_WAREHOUSE}/_checkpoints",
        TEXT,
        "Bronze's stream checkpoints, and their copies at savepoints; beside the tables, so a "
        "cluster shares them.",
    )
    quality_dir: Path = setting(
        "LAKEHOUSE_QUALITY_DIR",
        "${LAKEHOUSE_STATE_DIR}/quality",
        PATH,
        "The Great Expectations project (suites, stored results) and its Data Docs site.",
    )
    models_dir: Path = setting(
        "LAKEHOUSE_MODELS_DIR",
        "${LAKEHOUSE_STATE_DIR}/models",
        PATH,
        "Where `lakehouse train` records models: MLflow's SQLite store and the models' files.",
    )
    docs_port: int = setting(
        "QUALITY_DOCS_PORT", 8085, PORT, "The port `lakehouse data-docs` serves the Data Docs site on."
    )
    dashboard_port: int = setting("DASHBOARD_PORT", 8501, PORT, "The port the dashboard serves on.")
    metrics_port: int = setting(
        "METRICS_PORT", 9108, PORT, "The port of the Prometheus metrics, on /metrics (`lakehouse metrics`)."
    )
    dashboard_refresh_seconds: int = setting(
        "DASHBOARD_REFRESH_SECONDS",
        10,
        POSITIVE,
        "How often the dashboard reloads its figures; longer spares a busy machine.",
    )
    scheduler_port: int = setting(
        "SCHEDULER_PORT", 3000, PORT, "The port of the scheduler's web UI (Dagster, `make scheduler`)."
    )
    schedule_cron: str = setting(
        "SCHEDULE_CRON",
        "0 * * * *",
        CRON,
        "When the scheduled mode runs every table, in UTC: hourly by default.",
    )
    maintenance_cron: str = setting(
        "MAINTENANCE_CRON",
        "30 3 * * *",
        CRON,
        "When the scheduled mode runs the table services (`lakehouse maintain`), in UTC.",
    )
    scheduler_retries: int = setting(
        "SCHEDULER_RETRIES",
        3,
        COUNT,
        "How often the scheduler retries a run that failed for a passing reason (a service "
        "restarting, a writer busy).",
    )
    scheduler_retry_delay_seconds: int = setting(
        "SCHEDULER_RETRY_DELAY_SECONDS", 30, POSITIVE, "How long the scheduler waits before each such retry."
    )
    tables_at_once: int = setting(
        "TABLES_AT_ONCE",
        2,
        POSITIVE,
        "How many Silver and Gold tables a pass (`lakehouse run`, `silver`, `gold`) runs side "
        "by side; the continuous pipeline, how many chains of runs (plus one for the "
        "tightest target's chain).",
    )
    quality_in_memory_rows: int = setting(
        "QUALITY_IN_MEMORY_ROWS",
        100_000,
        POSITIVE,
        "Batches up to this many rows are validated in memory (GX's pandas engine), larger ones "
        "by its Spark engine; lower it when the driver is short of memory.",
    )
    shuffle_partitions: int = setting(
        "SPARK_SHUFFLE_PARTITIONS",
        4,
        POSITIVE,
        "Spark's shuffle partitions and Hudi's write parallelism: two or three per core.",
    )
    driver_memory: str = setting(
        "SPARK_DRIVER_MEMORY",
        "4g",
        TEXT,
        "The heap of a command's Spark driver, which in local mode runs the whole job.",
    )
    spark_ivy_dir: str = setting(
        "SPARK_IVY_DIR",
        "",
        TEXT,
        "Where Spark keeps the packages it resolves (the Hudi bundle, the Kafka connector); "
        "empty: Ivy's ~/.ivy2. The Compose image's shared cache is set here.",
    )
    spark_ui: bool = setting(
        "SPARK_UI",
        True,
        SWITCH,
        "Whether Spark applications serve their web UI (4040 on); tests turn it off.",
    )
    bronze_trigger_seconds: int = setting(
        "BRONZE_TRIGGER_SECONDS",
        10,
        POSITIVE,
        "How often streaming Bronze commits what Kafka brought: shorter is fresher, more commits. "
        "A topic whose readers' freshness targets allow it commits less often.",
    )
    bronze_max_offsets_per_batch: int = setting(
        "BRONZE_MAX_OFFSETS_PER_BATCH",
        200_000,
        POSITIVE,
        "The most Kafka messages one Bronze batch reads, so a backlog drains in batches that fit.",
    )
    bronze_earliest_plausible: str = setting(
        "BRONZE_EARLIEST_PLAUSIBLE",
        "2000-01-01",
        DATE,
        "Bronze quarantines a change dated earlier as implausible.",
    )
    bronze_max_ahead_seconds: int = setting(
        "BRONZE_MAX_AHEAD_SECONDS",
        24 * 3600,
        POSITIVE,
        "Bronze quarantines a change dated further ahead of now than this; clocks drift a little.",
    )
    compact_every_delta_commits: int = setting(
        "HUDI_COMPACT_EVERY_DELTA_COMMITS",
        10,
        POSITIVE,
        "Bronze's merge-on-read tables compact their log files every this many commits: fewer "
        "makes reads faster, more makes writes faster.",
    )
    commits_retained: int = setting(
        "HUDI_COMMITS_RETAINED",
        50,
        POSITIVE,
        "Commits the cleaner keeps per table: how far back time travel and incremental reads go.",
    )
    metastore_database: str = setting(
        "METASTORE_DATABASE",
        "metastore",
        TEXT,
        "The Postgres database of the shared Hive metastore; empty keeps the catalog in the "
        "Spark process (unit tests without services only).",
    )
    thrift_port: int = setting("THRIFT_PORT", 10000, PORT, "The JDBC/ODBC server's port.")
    thrift_bind_host: str = setting(
        "THRIFT_BIND_HOST",
        "localhost",
        TEXT,
        "Where the JDBC server listens: another address only behind a firewall.",
    )
    thrift_memory: str = setting(
        "THRIFT_DRIVER_MEMORY", "2g", TEXT, "The JDBC server's heap, where the analysts' queries run."
    )
    thrift_os_user: str = setting(
        "THRIFT_OS_USER",
        "retailmax-jdbc",
        OS_ACCOUNT,
        "The OS account the JDBC server runs as when root starts the services (created on its "
        "first start): it can read the warehouse and nothing the project keeps secret.",
    )
    analyst_user: str = setting(
        "ANALYST_USER", "analyst", TEXT, "The JDBC server's one account; its password is ANALYST_PASSWORD."
    )
    spark_master_port: int = setting(
        "SPARK_MASTER_PORT", 7077, PORT, "The port of the Spark standalone master `make cluster` starts."
    )
    spark_master_ui_port: int = setting(
        "SPARK_MASTER_UI_PORT",
        8090,
        PORT,
        "The web UI of the Spark master `make cluster` starts; its workers' UIs take the next ports.",
    )
    spark_workers: int = setting(
        "SPARK_WORKERS",
        2,
        POSITIVE,
        "The workers `make cluster` starts, each running one executor of each application.",
    )
    spark_worker_cores: int = setting(
        "SPARK_WORKER_CORES", 1, POSITIVE, "The cores each worker of `make cluster` offers."
    )
    spark_worker_memory: str = setting(
        "SPARK_WORKER_MEMORY",
        "2g",
        TEXT,
        "The memory each worker of `make cluster` offers: an executor's heap and overhead.",
    )
    spark_executor_memory: str = setting(
        "SPARK_EXECUTOR_MEMORY", "1536m", TEXT, "The heap of each executor on a cluster."
    )
    spark_executor_python: str = setting(
        "SPARK_EXECUTOR_PYTHON",
        "",
        TEXT,
        "The Python a cluster's executors run Python code with; empty: the command's own. "
        "`make cluster` prints the one its containers have.",
    )
    spark_cores_max: int = setting(
        "SPARK_CORES_MAX",
        0,
        COUNT,
        "The cores one application may take on a standalone cluster (0: all it can get); "
        "`lakehouse run --continuous` is two applications, so it needs a share each.",
    )
    hdfs_namenode_port: int = setting(
        "HDFS_NAMENODE_PORT",
        9820,
        PORT,
        "The port of the HDFS namenode `make cluster` starts, for an hdfs:// warehouse.",
    )
    hdfs_namenode_ui_port: int = setting(
        "HDFS_NAMENODE_UI_PORT",
        9870,
        PORT,
        "The web UI and JMX API of the HDFS namenode `make cluster` starts.",
    )
    s3_endpoint: str = setting(
        "S3_ENDPOINT",
        "",
        TEXT,
        "An S3-compatible store other than AWS (MinIO, say) for an s3a:// "
        "warehouse; empty for AWS itself, whose credentials come from its usual chain.",
    )
    s3_access_key: str = setting(
        "S3_ACCESS_KEY",
        "retailmax",
        TEXT,
        "The S3-compatible store's access key, MinIO's root user; the secret: MINIO_ROOT_PASSWORD.",
    )

    @property
    def pg_password(self) -> str:
        return _require("PGPASSWORD")

    @property
    def debezium_password(self) -> str:
        return _require("DEBEZIUM_PASSWORD")

    @property
    def metastore_password(self) -> str:
        return _require("METASTORE_PASSWORD")

    @property
    def analyst_password(self) -> str:
        return _require("ANALYST_PASSWORD")

    @property
    def s3_secret_key(self) -> str:
        """The S3-compatible store's secret: MinIO's root password, which `make env` draws."""
        return _require("MINIO_ROOT_PASSWORD")

    @property
    def metastore_jdbc_url(self) -> str:
        return f"jdbc:postgresql://{self.pg_host}:{self.pg_port}/{self.metastore_database}"

    @property
    def kafka_port(self) -> int:
        return int(self.kafka_bootstrap.rpartition(":")[2])

    @property
    def connect_port(self) -> int:
        return int(self.connect_url.rstrip("/").rsplit(":", 1)[1])

    def environment(self) -> dict[str, str]:
        """The variables that give a child process (a `lakehouse` command) these settings;
        `load()` in the child reads them back."""
        return {s.variable: render(getattr(self, name)) for name, s in declared().items()}

    def password(self, role: PgRole) -> str:
        return _require(role.password_variable)

    def pg_params(self, role: PgRole | None = None, **overrides: str) -> dict[str, str]:
        """Keyword arguments for psycopg.connect, as `role` (the owner without one)."""
        return {
            "host": self.pg_host,
            "port": str(self.pg_port),
            "user": role.name if role else self.pg_user,
            "dbname": self.pg_database,
            "password": self.password(role) if role else self.pg_password,
            "connect_timeout": "5",
        } | overrides


def declared() -> dict[str, Setting]:
    """Every setting's declaration by field name, in the order `load()` reads them: a derived
    default after what it derives from."""
    return {f.name: f.metadata["setting"] for f in fields(Settings)}


def load() -> Settings:
    load_env_file()
    known: dict[str, str] = {}
    values = {}
    for name, declaration in declared().items():
        values[name] = declaration.read(known)
        known[declaration.variable] = render(values[name])
    return Settings(**values)
