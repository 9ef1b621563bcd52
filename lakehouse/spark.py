"""The one place that builds a SparkSession: every job, test and notebook gets it here.

Spark line: Hudi 1.2.0 publishes its Spark bundle for Spark 3.5 (Scala 2.12) only, and the
pinned Great Expectations supports PySpark below 4.2, so PySpark is pinned to 3.5.7 in
pyproject.toml: the newest 3.5 release whose Kafka connector is published. The Hudi bundle
and the Kafka connector come through `spark.jars.packages`; their versions follow the
pinned Hudi version (infra/versions.env) and the installed PySpark (lakehouse/artifacts.py).
Ivy resolves them as infra/spark/ivysettings.xml says (why not through ~/.m2 is written
there); `make install` starts one session so that the download happens then, and later
sessions start from the cache. Every session uses the shared Hive metastore in Postgres,
whose database and tables `make services` creates (infra/metastore.py).
"""

# Why one module: it is everything the project asks of Spark itself, the session and how a
# job holds frames in that session's memory (HeldFrames, sized by the memory set here); the
# rest of the code sees only DataFrames.

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

import psycopg
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from lakehouse import artifacts
from lakehouse.jvm import project_jar
from lakehouse.settings import METASTORE_ROLE, ConfigurationError, Settings

IVY_SETTINGS = Path(__file__).resolve().parent.parent / "infra" / "spark" / "ivysettings.xml"
LOG_CONFIG = IVY_SETTINGS.with_name("log4j2.properties")
# Hudi sizes the records it holds in memory with JOL (shaded into its bundle). On first use
# in a JVM, JOL tries to attach an agent and HotSpot's Serviceability Agent to it, each from
# a Java process it starts, and both fail here (a JVM refuses to attach to itself unless
# told, and the agent is refused ptrace); it then sizes objects as it does without them.
# The attempts started five or six JVMs in every `lakehouse run`, inside Bronze's first
# batches, and the drain took about a tenth longer for them (CHANGELOG.md).
JOL_NO_ATTACH = "-Djol.skipDynamicAttach=true -Djol.skipHotspotSAAttach=true"
# Scheduler pools for a driver that runs chains of runs side by side (the continuous loop):
# jobs in URGENT_POOL get the next free core before the others'.
SCHEDULER_POOLS = IVY_SETTINGS.with_name("fairscheduler.xml")
URGENT_POOL = "urgent"
POOLED = {"spark.scheduler.mode": "FAIR", "spark.scheduler.allocation.file": SCHEDULER_POOLS.as_uri()}

LOOPBACK = "127.0.0.1"


class CatalogUnavailable(RuntimeError):
    """The shared catalog's database does not answer; the message says what to start."""


def spark_packages(settings: Settings | None = None) -> list[str]:
    """The jars every session loads, and for an s3a:// warehouse Hadoop's S3 connector, of
    the Hadoop release PySpark's client jars come from."""
    packages = [artifacts.hudi_bundle(), artifacts.kafka_connector()]
    if settings and settings.warehouse.startswith("s3a://"):
        packages.append(artifacts.hadoop_aws())
    return packages


def storage_config(settings: Settings) -> dict[str, str]:
    """What the warehouse's file system needs besides its URL.

    HDFS: closing a file waits until the DataNode has reported its last block to the
    NameNode; a client that asks too early sleeps 400 ms before asking again, by default.
    A Hudi commit writes a file per partition it touches (hundreds, for a day-partitioned
    table's first commit), each closed this way, so the first wait is 10 ms.

    An S3-compatible store other than AWS: its endpoint, by path-style addresses (MinIO's
    buckets are no host names), with its own keys."""
    config = {}
    if settings.warehouse.startswith("hdfs://"):
        config["spark.hadoop.dfs.client.block.write.locateFollowingBlock.initial.delay.ms"] = "10"
    if settings.s3_endpoint:
        settings.s3_secret_key  # noqa: B018 - fails here, naming the variable, when it is not set
        config |= {
            "spark.hadoop.fs.s3a.endpoint": settings.s3_endpoint,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.access.key": settings.s3_access_key,
            # Resolved from the environment, as the metastore's password (below),
            # on executors from the worker's, which the workers are started with.
            "spark.hadoop.fs.s3a.secret.key": "${env.MINIO_ROOT_PASSWORD}",
        }
    return config


def session_config(settings: Settings) -> dict[str, str]:
    return {
        "spark.jars.packages": ",".join(spark_packages(settings)),
        "spark.jars.ivySettings": str(IVY_SETTINGS),
        **({"spark.jars.ivy": settings.spark_ivy_dir} if settings.spark_ivy_dir else {}),
        # The project's Java classes (lakehouse/jvm.py), on the driver and every executor.
        "spark.jars": str(project_jar(settings.jars_dir)),
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
        "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(settings.shuffle_partitions),
        # Adaptive execution plans a query again after each shuffle stage, which it runs as a
        # Spark job of its own. A derived run is a chain of small queries (hundreds of changed
        # rows), whose time goes mostly to planning and scheduling, and with a few shuffle
        # partitions on two cores there is nothing to coalesce or split: without it, the
        # same runs take about an eighth less (CHANGELOG, 2026-12-04).
        "spark.sql.adaptive.enabled": "false",
        # Spark keeps the classes it generates for a query's operators in a cache of 100 by
        # default. One incremental run of unified orders alone generates 162, so in a process
        # that runs table after table (the continuous loop, a test session) every run found
        # its classes evicted and compiled them all again, and the JIT compiled the new ones
        # again too. A pass over every table in both paths generates about 1,100; with room for
        # them, later runs compile next to none (CHANGELOG, 2026-12-06).
        "spark.sql.codegen.cache.maxEntries": "2000",
        "spark.driver.memory": settings.driver_memory,
        # On a cluster (SPARK_MASTER=spark://...): each executor's heap, and the Python it
        # would start for Python code (session() sets it where PySpark reads it).
        "spark.executor.memory": settings.spark_executor_memory,
        "spark.pyspark.python": settings.spark_executor_python or sys.executable,
        "spark.ui.enabled": str(settings.spark_ui).lower(),
        # The UI shows jobs; killing them is for the process that runs them.
        "spark.ui.killEnabled": "false",
        # Progress bars are for terminals; jobs log to files and test output.
        "spark.ui.showConsoleProgress": "false",
        # Spark's logging, without the warnings each commit repeats about choices made here.
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG_CONFIG} {JOL_NO_ATTACH}",
        "spark.executor.extraJavaOptions": JOL_NO_ATTACH,
        # Hudi 1.2 answers a filter that fixes every record-key field from the record index,
        # and builds the lookup key for a DATE value in another format than the stored one:
        # `WHERE order_date = DATE'2025-06-01' AND product_category = ... AND region = ...` on
        # hudi_daily_sales_gold then returns nothing. Column statistics are off (see
        # lakehouse/tables.py), so the record index is all data skipping would use. The
        # launcher warns that it ignores this key, but PySpark sets it on the SparkConf, from
        # which every session inherits it, including each JDBC connection's.
        "hoodie.enable.data.skipping": "false",
        # An incremental read whose files the cleaner has deleted would otherwise scan the
        # whole table instead, by default, and hand a reader every row as if it had changed.
        # It fails instead, and the runner rebuilds, saying why (lakehouse/incremental.py).
        "hoodie.datasource.read.incr.fallback.fulltablescan.enable": "false",
        # A session caches a catalog table's relation, Hudi's file listing included, and would
        # answer from commits it saw first, for hours in a notebook or the JDBC server; expiring
        # it after a second shows every query the table's latest commit.
        "spark.sql.metadataCacheTTLSeconds": "1",
        # toPandas through Arrow: the quality gate collects small batches for GX's pandas
        # engine, and notebooks collect results.
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        **catalog_config(settings),
        **storage_config(settings),
        **({"spark.cores.max": str(settings.spark_cores_max)} if settings.spark_cores_max else {}),
    }


def catalog_config(settings: Settings) -> dict[str, str]:
    """The shared Hive metastore in Postgres (infra/metastore.py), or, without one, a catalog
    that lives and dies with the process."""
    if not settings.metastore_database:
        return {
            "spark.sql.catalogImplementation": "in-memory",
            "spark.sql.warehouse.dir": str(settings.state_dir / "spark-warehouse"),
        }
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": settings.warehouse,
        "spark.driver.extraClassPath": str(installed_jar(artifacts.pgjdbc(), settings)),
        "spark.hadoop.javax.jdo.option.ConnectionURL": settings.metastore_jdbc_url,
        "spark.hadoop.javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "spark.hadoop.javax.jdo.option.ConnectionUserName": METASTORE_ROLE,
        # A reference, not the password: PySpark puts every setting on the JVM's command line,
        # which any local user can list. Hadoop's configuration expands ${env.NAME} when the
        # Hive client reads the value, from the environment the JVM inherits from this process.
        "spark.hadoop.javax.jdo.option.ConnectionPassword": "${env.METASTORE_PASSWORD}",
        # infra/metastore.py creates the tables; the client must never do it (it deadlocks).
        "spark.hadoop.datanucleus.schema.autoCreateAll": "false",
        "spark.hadoop.hive.metastore.schema.verification": "true",
    }


# A driver on this machine. Nothing beyond it talks to the driver: its RPC and block manager
# listen on loopback, and so does its UI, which reads SPARK_LOCAL_IP (set by whoever starts
# the JVM), not the configuration.
LOCAL_DRIVER = {
    "spark.master": "local[*]",
    "spark.driver.bindAddress": LOOPBACK,
    "spark.driver.host": LOOPBACK,
}


def class_archive(settings: Settings) -> Path:
    """The classes a session loads, archived by `make install` for the JVM to map at start
    (lakehouse/class_archive.py)."""
    return settings.jars_dir / "spark-classes.jsa"


def installed_jar(coordinates: str, settings: Settings) -> Path:
    """A jar `make install` put under the state directory (infra/native/jars.py)."""
    jar = artifacts.jar_file(coordinates, settings.jars_dir)
    if not jar.exists():
        raise ConfigurationError(f"{coordinates} is not installed ({jar} is missing): run `make install`")
    return jar


def require_catalog(settings: Settings) -> None:
    """Fails, saying what to run, unless the shared catalog's database answers its own role.
    The setup (`make services`, infra/metastore.py) makes it, as the Postgres owner; a Spark
    process only checks, so that a missing catalog is named before Hive's client fails."""
    try:
        with psycopg.connect(
            host=settings.pg_host,
            port=settings.pg_port,
            dbname=settings.metastore_database,
            user=METASTORE_ROLE,
            password=settings.metastore_password,
            connect_timeout=5,
        ) as conn:
            ready = conn.execute("SELECT to_regclass('public.\"DBS\"')").fetchone()[0]
    except psycopg.OperationalError as error:
        reason = str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__
        raise CatalogUnavailable(
            f"The shared catalog (Hive metastore), database {settings.metastore_database} in "
            f"Postgres at {settings.pg_host}:{settings.pg_port}, cannot be reached ({reason}): "
            f"start the services (`make services`), which create it."
        ) from None
    if not ready:
        raise CatalogUnavailable(
            f"The shared catalog's database {settings.metastore_database} has no tables yet: "
            f"start the services (`make services`), which create them."
        )


# The JIT's quick tier alone, for a process that ends within minutes (one pass, one query):
# Spark generates classes for each query, and the optimizing tier compiling them took more
# than half of a one-shot `lakehouse run`'s CPU, more than its faster code gave back
# (CHANGELOG.md). A process that lasts (the streams, the continuous runner, the JDBC server,
# a notebook, a test session) keeps both tiers: there the optimized code pays for itself
# (the Bronze streams used a quarter more CPU with the quick tier alone, CHANGELOG.md).
# The quick tier alone also shrinks the JVM's code cache from 240 MB to 48 MB, which Spark's
# generated classes fill ("Out of space in CodeCache", and a JVM whose cache is full stops
# compiling), so the tiered size is kept.
QUICK_JIT = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"


def session(
    settings: Settings,
    app_name: str = "retailmax",
    extra_config: dict[str, str] | None = None,
    one_shot: bool = False,
) -> SparkSession:
    """The process's SparkSession (later calls get the first one, whatever they pass);
    `one_shot` for a process that ends within minutes (QUICK_JIT)."""
    # PySpark turns naive Python datetimes into timestamps (and back, on collect) in the
    # process's time zone; with the process on UTC they mean what Spark's UTC session means,
    # whatever the host is set to (quality rules compare columns with "now").
    os.environ["TZ"] = "UTC"
    time.tzset()
    # The Python that runs Python code in Spark's tasks (the e-mail rule's check, with its
    # library): this one, with the project's packages, unless a cluster's executors have
    # their own (SPARK_EXECUTOR_PYTHON: the same environment at another path, in the image
    # the Compose cluster runs). PySpark takes it from PYSPARK_PYTHON, not from
    # spark.pyspark.python, and would otherwise start whichever `python3` is first on PATH.
    os.environ["PYSPARK_PYTHON"] = settings.spark_executor_python or sys.executable
    if settings.metastore_database:
        require_catalog(settings)
    builder = SparkSession.builder.appName(app_name)
    # Under spark-submit the master comes from the submitter; SPARK_MASTER overrides it.
    master = os.environ.get("SPARK_MASTER")
    if master:
        builder = builder.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
        for key, value in LOCAL_DRIVER.items():
            builder = builder.config(key, value)
    config = session_config(settings) | (extra_config or {})
    if one_shot:
        config["spark.driver.extraJavaOptions"] += f" {QUICK_JIT}"
    # The archive was made with the shared catalog's JDBC driver on the class path, which
    # only sessions of that catalog have; any other JVM would refuse it, and say so on its
    # standard output, where a command's JSON goes. The JVM keeps quiet about it either way.
    if settings.metastore_database and class_archive(settings).exists():
        config["spark.driver.extraJavaOptions"] += (
            f" -XX:SharedArchiveFile={class_archive(settings)} -Xlog:cds*=off"
        )
    for key, value in config.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    _drop_unused_hadoop_defaults(spark)
    _ship_packages_to_executors(spark)
    return spark


class HeldFrames(contextlib.AbstractContextManager):
    """Frames a job computes once and reads several times, released together when it ends.

    In local mode each is checkpointed where it is computed (in memory, spilling to disk)
    rather than `persist()`ed, so a later query plans against a short lineage instead of the
    frame's whole plan, and a write to a table the frame read leaves it be (Spark's V1 write
    re-caches every cached plan that reads the written table). CHANGELOG.md has the
    measurement. On a cluster a worker can be lost during a run: a local checkpoint's blocks
    then go with it and fail the job, where a persisted frame's are computed again from its
    plan, so there frames are persisted."""

    def __init__(self) -> None:
        self._held: list[DataFrame] = []

    def __call__(self, frame: DataFrame) -> DataFrame:
        if not frame.sparkSession.sparkContext.master.startswith("local"):
            held = frame.persist(StorageLevel.MEMORY_AND_DISK)
            self._held.append(held)
            return held
        checkpoint = frame.localCheckpoint(eager=True)
        self._held.append(checkpoint)
        # A checkpoint keeps its frame's column identities, and Spark 3.5's analyzer fails a
        # join whose sides share them with "Failure when resolving conflicting references in
        # Join" where the checkpoint meets the relation it was read from (unified orders'
        # affected keys with its own lines), and, once renamed by a projection, where it meets
        # itself (the reconciliation). A new instance of the checkpoint's relation has column
        # identities of its own, and Spark renews it like any relation where it meets itself.
        relation = checkpoint._jdf.queryExecution().analyzed().newInstance()
        held = frame.sparkSession._jvm.org.apache.spark.sql.Dataset.ofRows(
            frame.sparkSession._jsparkSession, relation
        )
        return DataFrame(held, frame.sparkSession)

    def __exit__(self, *_exc) -> None:
        for held in self._held:
            if held.is_cached:
                held.unpersist()
            else:
                # PySpark 3.5 reaches a checkpoint's blocks only through its plan's RDD; left
                # alone, they stay until the JVM's garbage collector finds that RDD unreachable.
                held._jdf.queryExecution().analyzed().rdd().unpersist(False)
        self._held.clear()


# The defaults files of Hadoop's YARN and MapReduce, which no job here uses: Hadoop's client
# classes add them to every configuration, two thirds of a session's entries. Hudi serializes
# the session's whole Hadoop configuration into each task it ships and each table it opens,
# so every entry costs every write and read (CHANGELOG.md has the measurement). A part that
# adds a defaults file of its own later (HDFS's client does) makes Hadoop load them again.
UNUSED_HADOOP_DEFAULTS = ("yarn-default.xml", "mapred-default.xml")


def _drop_unused_hadoop_defaults(spark: SparkSession) -> None:
    """Unsets the session's Hadoop entries that come from UNUSED_HADOOP_DEFAULTS alone; an
    entry set anywhere else (spark.hadoop.*, a site file) stays. In the project's jar
    (lakehouse/jvm/): one call, where a loop over the entries from here took 1.6 s."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for name in UNUSED_HADOOP_DEFAULTS:
        spark.sparkContext._jvm.org.retailmax.lakehouse.HadoopDefaults.dropEntriesOnlyFrom(conf, name)


def _ship_packages_to_executors(spark: SparkSession) -> None:
    """spark-submit merges the jars it resolved for `spark.jars.packages` into `spark.jars`,
    then PySpark sets the builder's `spark.jars` (the project's jar) over them: a cluster's
    executors would get the project's jar alone and fail on the Kafka source's classes. The
    driver has every jar (`spark.repl.local.jars`); those missing are added for executors. In
    local mode the executor shares the driver's class path and needs none."""
    context = spark.sparkContext
    if context.master.startswith("local"):
        return
    conf = context.getConf()
    shipped = {Path(jar).name for jar in conf.get("spark.jars", "").split(",") if jar}
    for jar in conf.get("spark.repl.local.jars", "").split(","):
        if jar and Path(jar).name not in shipped:
            context._jsc.sc().addJar(jar)


if __name__ == "__main__":
    import dataclasses

    from lakehouse.settings import load

    # Run by `make install`, before any service runs: no shared catalog needed to fetch jars.
    session(dataclasses.replace(load(), metastore_database=""), "fetch-packages").stop()
    print("spark packages ready: " + ", ".join(spark_packages()))
