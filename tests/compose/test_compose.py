"""The whole demo in containers: the Compose file is valid for `docker compose config`, every
service and worker runs in the image built from the repository, a sale reaches Gold, the
analyst's JDBC login reads and is refused DDL, the pages answer, Connect killed and started
again loses nothing (Bronze equals Postgres), the Silver and Gold the containers build equal
what native Spark rebuilds from the same Bronze, and the cluster and scheduler profiles run."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
import requests

from bronze.tables import BRONZE_TABLES, DEBEZIUM
from infra import stack, workers
from infra.native import cluster
from lakehouse.settings import SECRET_VARIABLES, load
from medallion import verify
from medallion.invocation import lakehouse
from orchestration import assets
from serving import fastpath, jdbc
from tests.compose.conftest import PROJECT
from tests.support import (
    ROOT,
    assert_equals_full_rebuild,
    cli_env,
    run_lakehouse,
    run_workload,
    served_assets,
)

# A sale on a day of its own, far from the seed's and the workload's, with an order id far
# above theirs: its row in Gold is the probe's alone.
PROBE_ORDER = 10**12
PROBE_DAY = date(2001, 2, 3)
CDC_TABLES = [table for table in BRONZE_TABLES if table.envelope == DEBEZIUM]


def _containers() -> dict[str, dict]:
    """The project's containers by Compose service: `docker inspect` of each."""
    names = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"label=com.docker.compose.project={PROJECT}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    inspected = json.loads(
        subprocess.run(["docker", "inspect", *names], capture_output=True, text=True, check=True).stdout
    )
    return {c["Config"]["Labels"]["com.docker.compose.service"]: c for c in inspected}


def _until(condition, timeout: float, what) -> None:
    """Waits for `condition`; `what` says what did not happen, or is called to say it."""
    deadline = time.monotonic() + timeout
    while not condition():
        said = what() if callable(what) else what
        assert time.monotonic() < deadline, f"not within {timeout:.0f} s: {said}"
        time.sleep(3)


def test_the_compose_file_is_valid_for_docker_compose(tmp_path):
    if (
        shutil.which("docker") is None
        or subprocess.run(["docker", "compose", "version"], capture_output=True).returncode
    ):
        pytest.skip("no `docker compose` on this machine: `make test` installs it (make docker)")
    result = subprocess.run(
        [
            "docker",
            "compose",
            "-f",
            str(ROOT / "docker-compose.yml"),
            "--env-file",
            str(ROOT / "infra/versions.env"),
            "config",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env={
            "PATH": "/usr/bin:/bin",
            **{name: "secret" for name in SECRET_VARIABLES},
            **stack.compose_variables(dataclasses.replace(load(), state_dir=tmp_path)),
        },
    )
    assert result.returncode == 0, result.stderr


def test_every_service_and_worker_runs_healthy_in_the_image_built_here(services):
    containers = _containers()
    assert set(containers) == {
        "postgres",
        "kafka",
        "connect",
        "thrift",
        "dashboard",
        "metrics",
        "workers",
    }
    for name, container in containers.items():
        assert container["Config"]["Image"] == "retailmax:local", name
        assert container["State"]["Health"]["Status"] == "healthy", name
        # The services run as accounts of their own; the workers as the user who started them.
        user = container["Config"]["User"]
        expected = f"{os.getuid()}:{os.getgid()}" if name == "workers" else None
        assert user == expected if expected else user not in ("", "root", "0"), (name, user)
    assert all(s.healthy for s in stack.status(services)), [s.line() for s in stack.status(services)]
    running = {p.name: p for p in workers.processes(services)}
    assert set(running) == {"supervisor", "simulator", "pipeline", "data-docs"}
    assert all(p.healthy for p in running.values()), [p.line() for p in running.values()]


def test_a_sale_written_in_postgres_reaches_daily_sales_gold(services, db):
    customer, (product, price) = (
        db.execute("SELECT min(customer_id) FROM retail.customer_master").fetchone()[0],
        db.execute("SELECT product_id, unit_price FROM retail.product_catalog ORDER BY 1 LIMIT 1").fetchone(),
    )
    now = datetime.now(UTC)
    db.execute(
        "INSERT INTO retail.sales_transactions (order_id, line_item_id, customer_id, product_id,"
        " quantity, unit_price, discount, channel, status, transaction_ts, updated_ts)"
        " VALUES (%s, 1, %s, %s, 3, %s, 0, 'web', 'completed', %s, %s)",
        (PROBE_ORDER, customer, product, price, datetime(2001, 2, 3, 12, tzinfo=UTC), now),
    )

    def revenue() -> Decimal | None:
        try:
            found = fastpath.query(
                services.warehouse,
                f"SELECT sum(total_sales_amount) AS revenue FROM gold.hudi_daily_sales_gold "
                f"WHERE order_date = DATE '{PROBE_DAY}'",
            ).table
        except fastpath.QueryError:
            return None  # no Gold yet, or opened while a commit was in flight
        return found.column("revenue")[0].as_py()

    # The first pass builds every table from the seed before it reads the probe's change.
    _until(lambda: revenue() is not None, 900, "the probe sale in hudi_daily_sales_gold")
    assert revenue() == 3 * price


def test_the_analysts_jdbc_login_reads_gold_and_is_refused_ddl(services):
    with jdbc.connect(services) as connection:
        cursor = connection.cursor()

        def registered() -> bool:
            cursor.execute("SHOW TABLES IN gold LIKE 'hudi_daily_sales_gold'")
            return bool(cursor.fetchall())

        # The writer registers a table in the shared catalog just after its first commit, so
        # the files the probe above found can be a few seconds ahead of the catalog's entry.
        _until(registered, 120, "hudi_daily_sales_gold in the shared catalog")
        cursor.execute("SELECT count(*) FROM gold.hudi_daily_sales_gold")
        assert cursor.fetchall()[0][0] > 0
        with pytest.raises(Exception, match="refused: the RetailMax JDBC server only reads"):
            cursor.execute("CREATE TABLE gold.mine (id INT) USING parquet")


def test_the_dashboard_the_data_docs_and_the_metrics_answer(services):
    assert requests.get(f"http://localhost:{services.dashboard_port}/_stcore/health", timeout=10).ok
    assert requests.get(f"http://localhost:{services.docs_port}/", timeout=10).ok
    metrics = requests.get(f"http://localhost:{services.metrics_port}/metrics", timeout=60)
    assert metrics.ok and "retailmax_service_up" in metrics.text


def test_connect_killed_and_started_again_loses_nothing(services, spark, db):
    # The workload stops first, so that Bronze can be caught equal to a source that no
    # longer moves (stopped, not exited: the supervisor leaves it down).
    workers.worker(services, "simulator").stop()
    stack.stop_service(services, "connect", crash=True)
    assert "connect" not in _containers()
    run_workload(db, steps=40, seed=7)
    stack.start_service(services, "connect")

    verdicts = []

    def bronze_equals_postgres() -> bool:
        verdicts[:] = [verify.bronze_against_postgres(spark, services, db, t) for t in CDC_TABLES]
        assert not any(v.duplicated for v in verdicts), [v.line() for v in verdicts]
        return all(v.equal for v in verdicts)

    _until(bronze_equals_postgres, 300, lambda: [v.line() for v in verdicts])


def test_silver_and_gold_built_in_containers_equal_a_native_rebuild_from_the_same_bronze(services, spark):
    # With the workload and the continuous pipeline stopped (the workload already is, when
    # the group runs in order), one `lakehouse run` in the workers' container, the image's
    # own Python, Spark and jars, brings every table up to what Bronze holds; the loop would
    # take the tables with minutes-long freshness targets in their own time.
    for name in ("simulator", "pipeline"):
        workers.worker(services, name).stop()
    stack.run_in_container(services, "workers", "python", "-m", "pipeline.cli", "run")
    # Native Spark, the native mode's engine, recomputes every table from the same Bronze.
    assert_equals_full_rebuild(spark, services)


# A job on the cluster, run by the command's own Python as the driver: a Python UDF (run by
# the executors' Python), a shuffle across both workers' executors (each reads the other's
# shuffle files from the disk they share, as executors of one host do) and a write to HDFS.
CLUSTER_JOB = """
import os

import pandas
from pyspark.sql import functions as F
from lakehouse.settings import load
from lakehouse.spark import session

settings = load()
spark = session(settings, "compose-cluster-check", {"spark.scheduler.minRegisteredResourcesRatio": "1.0"})

@F.pandas_udf("long")
def group(ids):
    return ids % 97

@F.pandas_udf("string")
def executor(ids):  # an executor's working directory: <worker's dir>/<application>/<executor>
    return pandas.Series([os.getcwd()] * len(ids))

path = settings.warehouse + "/cluster-check"
rows = spark.range(0, 100000, 1, 4).select(group("id").alias("k"), executor("id").alias("executor"))
rows.groupBy("k").agg(F.count(F.lit(1)).alias("n"), F.collect_set("executor").alias("executors")).write.mode(
    "overwrite"
).parquet(path)
written = spark.read.parquet(path)
executors = written.select(F.explode("executors")).distinct().count()
print("executors, groups, rows:", executors, written.count(), written.agg(F.sum("n")).first()[0])
"""


def test_make_cluster_and_make_scheduler_start_their_containers(services):
    # Where the services run in Compose, `lakehouse cluster up` and `lakehouse scheduler up`
    # start their profiles' containers, from the same image (the two at once). A job runs on
    # the cluster with the variables `cluster up` prints; the scheduler serves every table's
    # asset. Last in the group: the workload is stopped by now.
    scheduler = subprocess.Popen(
        lakehouse("scheduler", "up"), cwd=ROOT, env=cli_env(services), stdout=subprocess.PIPE, text=True
    )
    try:
        started = run_lakehouse(services, "cluster", "up")
        assert started.returncode == 0, started.stdout + started.stderr
        assert scheduler.wait(timeout=300) == 0, scheduler.stdout.read()
        daemons = cluster.status(services, in_containers=True)
        assert [(name, healthy) for name, _, healthy in daemons] == [
            (daemon.name, True) for daemon in cluster.daemons(services)
        ]
        assert {"hdfs-namenode", "spark-worker-2", "scheduler", "scheduler-daemon"} <= set(_containers())
        printed = dict(re.findall(r"\b([A-Z_]+)=(\S+)", started.stdout))
        expected = {"SPARK_MASTER", "LAKEHOUSE_WAREHOUSE", "SPARK_EXECUTOR_PYTHON"}
        assert set(printed) == expected, started.stdout
        job = subprocess.run(
            [sys.executable, "-c", CLUSTER_JOB],
            cwd=ROOT,
            env={**cli_env(services), **printed},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert job.returncode == 0, job.stdout[-2000:] + job.stderr[-4000:]
        assert job.stdout.splitlines()[-1] == "executors, groups, rows: 2 97 100000"
        assert served_assets(services) == {(table.layer, table.name) for table in assets.tables()}
    finally:
        scheduler.wait(timeout=300)
        for command in (("cluster", "down"), ("scheduler", "down")):
            run_lakehouse(services, *command)
    assert not {"hdfs-namenode", "spark-master", "scheduler"} & set(_containers())
