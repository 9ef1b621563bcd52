"""Settings from the environment, with defaults for the local demo.

Secrets are never defaulted: they come from the environment or from the untracked
`.env` file that `lakehouse env` writes once with random values. A missing secret fails
at start with a message naming the variable.
"""

# Why one module: each setting is declared, defaulted and validated once, here; it is long
# because the project has many settings. Issue 31's `duplicates` finding (settings spelled
# three times) is the change that shortens it.

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass
from datetime import date
from importlib import resources
from pathlib import Path

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
SECRET_VARIABLES = ("PGPASSWORD", "DEBEZIUM_PASSWORD", "METASTORE_PASSWORD", "MINIO_ROOT_PASSWORD",
                    "ANALYST_PASSWORD", *(role.password_variable for role in PG_ROLES))
# The Postgres role that owns the Hive metastore's database (infra/metastore.py).
METASTORE_ROLE = "metastore"


class ConfigurationError(RuntimeError):
    """A setting is missing or wrong; the message says what to fix."""


def load_env_file(path: Path = ENV_FILE) -> None:
    """Adds `KEY=value` lines of `path` to os.environ; the real environment wins."""
    if not path.exists():
        return
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip().isidentifier():
            raise ConfigurationError(f"{path}:{number}: expected KEY=value, got {line!r}")
        os.environ.setdefault(key.strip(), value.strip().strip('"').strip("'"))


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


def _port(name: str, default: int) -> int:
    raw = os.environ.get(name, str(default))
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise ConfigurationError(f"{name}={raw!r} is not a TCP port number (1-65535)")
    return int(raw)


def _positive(name: str, default: int) -> int:
    raw = os.environ.get(name, str(default))
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigurationError(f"{name}={raw!r} must be a whole number of at least 1")
    return int(raw)


def _unprivileged_user(name: str, default: str) -> str:
    raw = os.environ.get(name, default)
    if not re.fullmatch(r"[a-z_][a-z0-9_-]{0,31}", raw) or raw == "root":
        raise ConfigurationError(f"{name}={raw!r} must name an OS account other than root "
                                 f"(lower-case letters, digits, '_' and '-')")
    return raw


def _date(name: str, default: str) -> str:
    raw = os.environ.get(name, default)
    try:
        date.fromisoformat(raw)
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not a date (YYYY-MM-DD)") from None
    return raw


def _count(name: str, default: int) -> int:
    raw = os.environ.get(name, str(default))
    if not raw.isdigit():
        raise ConfigurationError(f"{name}={raw!r} must be a whole number (0 or more)")
    return int(raw)


def _cron(name: str, default: str) -> str:
    value = os.environ.get(name, default)
    if len(value.split()) != 5:
        raise ConfigurationError(f"{name}={value!r} must be a cron expression of five fields "
                                 f"(minute hour day month weekday), e.g. {default!r}")
    return value


def _host_port(name: str, default: str) -> tuple[str, int]:
    value = os.environ.get(name, default)
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigurationError(f"{name}={value!r} must look like host:port, e.g. {default}")
    return host, int(port)


@dataclass(frozen=True)
class Settings:
    state_dir: Path
    pg_host: str
    pg_port: int
    pg_user: str
    pg_database: str
    kafka_bootstrap: str
    connect_url: str
    warehouse: str
    checkpoints: str = ""
    quality_dir: Path = Path(".lake/quality")
    docs_port: int = 8085
    dashboard_port: int = 8501
    metrics_port: int = 9108
    dashboard_refresh_seconds: int = 10
    scheduler_port: int = 3000
    schedule_cron: str = "0 * * * *"
    maintenance_cron: str = "30 3 * * *"
    scheduler_retries: int = 3
    scheduler_retry_delay_seconds: int = 30
    scheduled_freshness_minutes: int = 120
    quality_in_memory_rows: int = 100_000
    shuffle_partitions: int = 4
    driver_memory: str = "4g"
    spark_ui: bool = True
    bronze_trigger_seconds: int = 10
    bronze_max_offsets_per_batch: int = 200_000
    # The times a change may carry before Bronze quarantines it (bronze/decode.py Plausible).
    bronze_earliest_plausible: str = "2000-01-01"
    bronze_max_ahead_seconds: int = 24 * 3600
    compact_every_delta_commits: int = 10
    commits_retained: int = 50
    # The Postgres database of the shared Hive metastore; "" keeps the catalog in the Spark
    # process (unit tests without services only).
    metastore_database: str = "metastore"
    thrift_port: int = 10000
    thrift_bind_host: str = "localhost"
    thrift_memory: str = "2g"
    # The OS account the JDBC server runs as when root starts the services (created on its
    # first start): it can read the warehouse and nothing the project keeps secret.
    thrift_os_user: str = "retailmax-jdbc"
    # The JDBC server's one account (its password is ANALYST_PASSWORD in .env).
    analyst_user: str = "analyst"
    # `make cluster` (infra/native/cluster.py): a Spark standalone master with this many workers,
    # each offering its cores and memory to one executor per application, and HDFS.
    spark_master_port: int = 7077
    spark_workers: int = 2
    spark_worker_cores: int = 1
    spark_worker_memory: str = "2g"
    spark_executor_memory: str = "1536m"
    # The cores one application may take on a standalone cluster (0: all it can get, Spark's
    # default). `lakehouse run --continuous` is two applications, so it needs a share each.
    spark_cores_max: int = 0
    hdfs_namenode_port: int = 9820
    # An S3-compatible store other than AWS (MinIO in docker-compose.yml) for an s3a://
    # warehouse; empty for AWS itself, whose credentials come from its usual chain.
    s3_endpoint: str = ""
    s3_access_key: str = "retailmax"

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
        return _host_port("KAFKA_BOOTSTRAP_SERVERS", "localhost:9092")[1]

    @property
    def connect_port(self) -> int:
        return int(self.connect_url.rstrip("/").rsplit(":", 1)[1])

    def environment(self) -> dict[str, str]:
        """The variables that give a child process (a `lakehouse` command) these settings;
        `load()` in the child reads them back."""
        return {
            "LAKEHOUSE_STATE_DIR": str(self.state_dir), "PGHOST": self.pg_host,
            "PGPORT": str(self.pg_port), "PGUSER": self.pg_user, "PGDATABASE": self.pg_database,
            "KAFKA_BOOTSTRAP_SERVERS": self.kafka_bootstrap, "CONNECT_URL": self.connect_url,
            "LAKEHOUSE_WAREHOUSE": self.warehouse, "LAKEHOUSE_CHECKPOINTS": self.checkpoints,
            "LAKEHOUSE_QUALITY_DIR": str(self.quality_dir), "QUALITY_DOCS_PORT": str(self.docs_port),
            "DASHBOARD_PORT": str(self.dashboard_port), "METRICS_PORT": str(self.metrics_port),
            "DASHBOARD_REFRESH_SECONDS": str(self.dashboard_refresh_seconds),
            "SCHEDULER_PORT": str(self.scheduler_port), "SCHEDULE_CRON": self.schedule_cron,
            "MAINTENANCE_CRON": self.maintenance_cron,
            "SCHEDULER_RETRIES": str(self.scheduler_retries),
            "SCHEDULER_RETRY_DELAY_SECONDS": str(self.scheduler_retry_delay_seconds),
            "SCHEDULED_FRESHNESS_MINUTES": str(self.scheduled_freshness_minutes),
            "QUALITY_IN_MEMORY_ROWS": str(self.quality_in_memory_rows),
            "SPARK_SHUFFLE_PARTITIONS": str(self.shuffle_partitions),
            "SPARK_DRIVER_MEMORY": self.driver_memory, "SPARK_UI": str(self.spark_ui).lower(),
            "BRONZE_TRIGGER_SECONDS": str(self.bronze_trigger_seconds),
            "BRONZE_MAX_OFFSETS_PER_BATCH": str(self.bronze_max_offsets_per_batch),
            "BRONZE_EARLIEST_PLAUSIBLE": self.bronze_earliest_plausible,
            "BRONZE_MAX_AHEAD_SECONDS": str(self.bronze_max_ahead_seconds),
            "HUDI_COMPACT_EVERY_DELTA_COMMITS": str(self.compact_every_delta_commits),
            "HUDI_COMMITS_RETAINED": str(self.commits_retained),
            "METASTORE_DATABASE": self.metastore_database, "THRIFT_PORT": str(self.thrift_port),
            "THRIFT_BIND_HOST": self.thrift_bind_host, "THRIFT_DRIVER_MEMORY": self.thrift_memory,
            "THRIFT_OS_USER": self.thrift_os_user,
            "ANALYST_USER": self.analyst_user,
            "SPARK_MASTER_PORT": str(self.spark_master_port), "SPARK_WORKERS": str(self.spark_workers),
            "SPARK_WORKER_CORES": str(self.spark_worker_cores),
            "SPARK_WORKER_MEMORY": self.spark_worker_memory,
            "SPARK_EXECUTOR_MEMORY": self.spark_executor_memory,
            "SPARK_CORES_MAX": str(self.spark_cores_max),
            "HDFS_NAMENODE_PORT": str(self.hdfs_namenode_port),
            "S3_ENDPOINT": self.s3_endpoint, "S3_ACCESS_KEY": self.s3_access_key,
        }

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


def load() -> Settings:
    load_env_file()
    state_dir = Path(os.environ.get("LAKEHOUSE_STATE_DIR", ".lake")).resolve()
    _host_port("KAFKA_BOOTSTRAP_SERVERS", "localhost:9092")
    connect_url = os.environ.get("CONNECT_URL", "http://localhost:8083")
    if not connect_url.startswith("http") or not connect_url.rstrip("/").rsplit(":", 1)[-1].isdigit():
        raise ConfigurationError(f"CONNECT_URL={connect_url!r} must look like http://host:port")
    warehouse = os.environ.get("LAKEHOUSE_WAREHOUSE", str(state_dir / "warehouse"))
    if "://" not in warehouse:
        warehouse = str(Path(warehouse).resolve())
    return Settings(
        state_dir=state_dir,
        pg_host=os.environ.get("PGHOST", "localhost"),
        pg_port=_port("PGPORT", 5432),
        pg_user=os.environ.get("PGUSER", "retailmax"),
        pg_database=os.environ.get("PGDATABASE", "retailmax"),
        kafka_bootstrap=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "localhost:9092"),
        connect_url=connect_url.rstrip("/"),
        warehouse=warehouse,
        # Beside the tables, so a cluster run keeps them on the same shared storage.
        checkpoints=os.environ.get("LAKEHOUSE_CHECKPOINTS", f"{warehouse.rstrip('/')}/_checkpoints"),
        # The Great Expectations project (suites, stored results) and its Data Docs site.
        quality_dir=Path(os.environ.get("LAKEHOUSE_QUALITY_DIR", state_dir / "quality")).resolve(),
        docs_port=_port("QUALITY_DOCS_PORT", 8085),
        dashboard_port=_port("DASHBOARD_PORT", 8501),
        metrics_port=_port("METRICS_PORT", 9108),
        dashboard_refresh_seconds=_positive("DASHBOARD_REFRESH_SECONDS", 10),
        scheduler_port=_port("SCHEDULER_PORT", 3000),
        # When the scheduled mode runs every table (orchestration/): hourly by default.
        schedule_cron=_cron("SCHEDULE_CRON", "0 * * * *"),
        maintenance_cron=_cron("MAINTENANCE_CRON", "30 3 * * *"),
        scheduler_retries=_count("SCHEDULER_RETRIES", 3),
        scheduler_retry_delay_seconds=_positive("SCHEDULER_RETRY_DELAY_SECONDS", 30),
        # How old a Gold table without a declared `fresh_within` may get in the scheduled mode.
        scheduled_freshness_minutes=_positive("SCHEDULED_FRESHNESS_MINUTES", 120),
        # Batches up to this many rows are validated in memory (GX's pandas engine).
        quality_in_memory_rows=_positive("QUALITY_IN_MEMORY_ROWS", 100_000),
        shuffle_partitions=_positive("SPARK_SHUFFLE_PARTITIONS", 4),
        driver_memory=os.environ.get("SPARK_DRIVER_MEMORY", "4g"),
        spark_ui=os.environ.get("SPARK_UI", "true").lower() in ("1", "true", "yes"),
        bronze_trigger_seconds=_positive("BRONZE_TRIGGER_SECONDS", 10),
        bronze_max_offsets_per_batch=_positive("BRONZE_MAX_OFFSETS_PER_BATCH", 200_000),
        bronze_earliest_plausible=_date("BRONZE_EARLIEST_PLAUSIBLE", "2000-01-01"),
        bronze_max_ahead_seconds=_positive("BRONZE_MAX_AHEAD_SECONDS", 24 * 3600),
        compact_every_delta_commits=_positive("HUDI_COMPACT_EVERY_DELTA_COMMITS", 10),
        commits_retained=_positive("HUDI_COMMITS_RETAINED", 50),
        metastore_database=os.environ.get("METASTORE_DATABASE", "metastore"),
        thrift_port=_port("THRIFT_PORT", 10000),
        thrift_bind_host=os.environ.get("THRIFT_BIND_HOST", "localhost"),
        thrift_memory=os.environ.get("THRIFT_DRIVER_MEMORY", "2g"),
        thrift_os_user=_unprivileged_user("THRIFT_OS_USER", "retailmax-jdbc"),
        analyst_user=os.environ.get("ANALYST_USER", "analyst"),
        spark_master_port=_port("SPARK_MASTER_PORT", 7077),
        spark_workers=_positive("SPARK_WORKERS", 2),
        spark_worker_cores=_positive("SPARK_WORKER_CORES", 1),
        spark_worker_memory=os.environ.get("SPARK_WORKER_MEMORY", "2g"),
        spark_executor_memory=os.environ.get("SPARK_EXECUTOR_MEMORY", "1536m"),
        spark_cores_max=_count("SPARK_CORES_MAX", 0),
        hdfs_namenode_port=_port("HDFS_NAMENODE_PORT", 9820),
        s3_endpoint=os.environ.get("S3_ENDPOINT", ""),
        s3_access_key=os.environ.get("S3_ACCESS_KEY", "retailmax"),
    )
