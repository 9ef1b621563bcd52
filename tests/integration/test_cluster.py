"""The same jobs on a Spark standalone cluster over HDFS (`make cluster`, infra/native/cluster.py):
a pass there lands Bronze equal to Postgres and Silver and Gold equal to the same pass run
locally, and a worker killed during the Silver run costs its tasks, not the result."""

from __future__ import annotations

import dataclasses
import subprocess
import time

import pytest

from infra import metastore
from infra.native import cluster
from ingestion.events import EventStreams
from medallion import invocation, verify
from medallion.tables import derived_tables
from tests.support import CDC_TABLES, ROOT, cli_env, drain_until_equal, run_workload

# A cluster of its own and a second pass: minutes, so it runs after the shorter tests.
pytestmark = pytest.mark.long


@pytest.fixture(scope="module")
def on_cluster(services, spark):
    """Settings whose warehouse, checkpoints and catalog are the cluster's own, empty; the
    cluster is the session's, under its state directory and on its ports."""
    cluster.start(services)
    warehouse = f"{cluster.hdfs_url(services)}/retailmax-tests/warehouse"
    jvm = spark.sparkContext._jvm
    root = jvm.org.apache.hadoop.fs.Path(warehouse)
    root.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).delete(root, True)
    # One metastore serves one warehouse: the cluster's tables get their own catalog.
    on_cluster = dataclasses.replace(
        services,
        warehouse=warehouse,
        checkpoints=f"{warehouse}/_checkpoints",
        metastore_database="metastore_cluster_tests",
    )
    metastore.ensure(on_cluster)
    yield on_cluster
    cluster.stop(services)


def lakehouse(settings, *arguments: str) -> subprocess.Popen:
    """A `lakehouse` command whose Spark application runs on the cluster."""
    env = {**cli_env(settings), "SPARK_MASTER": cluster.master_url(settings)}
    return subprocess.Popen(
        invocation.lakehouse(*arguments),
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def read_until(process: subprocess.Popen, done) -> str:
    """The process's output up to the first line for which done(line) holds."""
    output = ""
    while True:
        line = process.stdout.readline()
        assert line, f"the command ended before the line it was waited for:\n{output[-4000:]}"
        output += line
        if done(line):
            return output


def reports(output: str) -> str:
    return "\n".join(line for line in output.splitlines() if line.startswith(("hudi_", "bronze:")))


def test_a_pass_on_the_cluster_over_hdfs_equals_postgres_and_the_same_pass_run_locally(
    services, spark, db, producer, on_cluster
):
    run_workload(db, steps=200, seed=2026)
    customers = [r[0] for r in db.execute("SELECT customer_id FROM retail.customer_master")]
    products = db.execute("SELECT product_id, sku FROM retail.product_catalog").fetchall()
    events = EventStreams(producer, 2026, customers, [s for _, s in products], [p for p, _ in products])
    for _ in range(300):
        events.step()
    producer.flush()
    # Once Bronze here equals Postgres, Kafka holds every change the cluster's pass must land.
    drain_until_equal(spark, services, db)

    # One pass, one application on the two workers. A worker (with its executor) dies while
    # Silver runs: after the first Silver table's report, before the last's.
    began = time.monotonic()
    run = lakehouse(on_cluster, "run")
    output = read_until(run, lambda line: line.startswith("hudi_") and "_silver " in line)
    assert run.poll() is None, "the pass must still be in Silver"
    victim = cluster.daemons(services)[-1]
    victim.kill()
    try:
        rest, _ = run.communicate(timeout=900)
    finally:
        victim.start()
    output += rest
    print(f"{reports(output)}\npass on the cluster: {time.monotonic() - began:.0f} s")
    assert run.returncode == 0, output[-4000:]

    verdicts = [verify.bronze_against_postgres(spark, on_cluster, db, t) for t in CDC_TABLES]
    assert all(v.equal for v in verdicts), "\n".join(v.line() for v in verdicts)
    # The cluster's tables against the same transforms run here, in this process, over the
    # cluster's own Bronze: the session's local warehouse may hold other inputs (a message a
    # test made its writer fail on is quarantined there, and lands on the cluster).
    verdicts = [v for t in derived_tables() for v in verify.derived_against_rebuild(spark, on_cluster, t)]
    assert all(v.equal for v in verdicts), "\n".join(v.line() for v in verdicts)
