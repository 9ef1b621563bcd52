"""GDPR erasure on the real stack: a customer's personal data leaves the source, every layer,
the quarantine and quality-result tables and every file of the warehouse, while their sales
keep their place in Gold."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from bronze.tables import CUSTOMER_MASTER
from gold.tables import CUSTOMER_SEGMENTS, DAILY_SALES
from ingestion.topics import cdc_topic
from lakehouse.hudi import snapshot
from medallion import verify
from operations import erasure
from silver.tables import CUSTOMER_PROFILES, UNIFIED_CUSTOMER_ORDERS
from tests.support import assert_equals_full_rebuild, drain_until_equal, rows, run_all, run_lakehouse


def files_holding(root: Path, needles: list[str]) -> list[str]:
    """The files under `root` holding one of `needles`: in their bytes, or in the decoded
    values of a Parquet file (whose pages may be compressed)."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        text = path.read_bytes().decode("latin-1")
        if path.suffix == ".parquet":
            text += json.dumps(pq.ParquetFile(path).read().to_pylist(), default=str)
        if any(needle in text for needle in needles):
            found.append(str(path.relative_to(root)))
    return found


def _new_customer(db, customer_id: int, first: str, last: str, email: str) -> None:
    db.execute(
        "INSERT INTO retail.customer_master VALUES (%s, %s, %s, %s, '+47 555 0101', "
        "'1980-02-03', 'Bergen', 'VL', 'NO', 'europe', 'gold', now(), now())",
        (customer_id, first, last, email),
    )


def _quarantined_message(producer, customer_id: int, first: str, last: str, email: str) -> None:
    """A message about the customer that Bronze cannot decode (an unknown op): it lands in
    the quarantine table, raw."""
    after = {"customer_id": str(customer_id), "first_name": first, "last_name": last, "email": email}
    producer.send(
        cdc_topic("customer_master"),
        key=json.dumps({"customer_id": customer_id}).encode(),
        value=json.dumps({"op": "x", "after": after, "source": {"lsn": "1"}}).encode(),
    )
    producer.flush()


def test_erasure_leaves_no_personal_data_anywhere_and_keeps_the_sales(services, spark, db, producer):
    warehouse = Path(services.warehouse)
    kept = db.execute("SELECT max(customer_id) + 1000 FROM retail.customer_master").fetchone()[0]
    deleted = kept + 1
    # A malformed e-mail: her profile is quarantined (the rule's samples give the reason, not
    # the address).
    kept_data = ("Zebulon", f"Quillfeather-{kept}", f"zebulon.quillfeather.{kept}@example")
    deleted_data = ("Marigold", f"Thistlewood-{deleted}", f"marigold.{deleted}@example.com")
    _new_customer(db, kept, *kept_data)
    _new_customer(db, deleted, *deleted_data)
    order = db.execute("SELECT max(order_id) + 1 FROM retail.sales_transactions").fetchone()[0]
    for line in (1, 2):
        db.execute(
            "INSERT INTO retail.sales_transactions SELECT %s, %s, %s, product_id, 2, "
            "unit_price, 0, 'web', NULL, 'completed', now() - interval '1 hour', now() "
            "FROM retail.product_catalog ORDER BY product_id LIMIT 1",
            (order, line, kept),
        )
    _quarantined_message(producer, kept, *kept_data)
    drain_until_equal(spark, services, db)
    run_all(spark, services)
    db.execute("DELETE FROM retail.customer_master WHERE customer_id = %s", (deleted,))
    drain_until_equal(spark, services, db)
    run_all(spark, services)

    needles = [kept_data[2], kept_data[1], deleted_data[2], deleted_data[1]]
    before = files_holding(warehouse, needles)
    for place in (
        f"bronze/{CUSTOMER_MASTER.name}/",
        f"bronze/{CUSTOMER_MASTER.quarantine.name}/",
        f"silver/{CUSTOMER_PROFILES.quarantine.name}/",
    ):
        assert any(f.startswith(place) for f in before), f"the scan found nothing in {place}: {before}"
    sales = rows(spark, services, DAILY_SALES)

    report = erasure.erase(spark, services, "customer_id", [kept, deleted])
    print("\n".join(report.lines()))
    assert report.anonymized_at_source == [kept]

    assert files_holding(warehouse, needles) == [], "personal data is still stored"
    assert files_holding(Path(services.quality_dir), needles) == []
    source = db.execute(
        "SELECT first_name, last_name, email, phone, birth_date, city, region "
        "FROM retail.customer_master WHERE customer_id = %s",
        (kept,),
    ).fetchone()
    assert source == ("erased", "erased", f"erased-{kept}@erased.example", None, None, "erased", "europe")
    assert verify.bronze_against_postgres(spark, services, db, CUSTOMER_MASTER).equal
    [profile] = snapshot(spark, CUSTOMER_PROFILES, services).where(f"customer_id = {kept}").collect()
    assert (profile.first_name, profile.email, profile.order_count) == ("erased", source[2], 1)
    segments = snapshot(spark, CUSTOMER_SEGMENTS, services)
    assert segments.where(f"customer_id = {kept}").count() == 1
    assert segments.where(f"customer_id = {deleted}").count() == 0
    assert rows(spark, services, DAILY_SALES) == sales, "erasure changed Gold's sales"

    # The pipeline goes on from where erasure left it, in every table that reads customers.
    assert "full" not in run_all(spark, services).values()
    assert_equals_full_rebuild(
        spark, services, [UNIFIED_CUSTOMER_ORDERS, CUSTOMER_PROFILES, DAILY_SALES, CUSTOMER_SEGMENTS]
    )


def test_erasing_a_customer_the_lakehouse_never_held_is_refused(services):
    refused = run_lakehouse(services, "erase", "--customer-id", "987654321")
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert (
        "no customer_id 987654321: not in retail.customer_master and not in what "
        "bronze.hudi_customer_master_bronze holds"
    ) in refused.stderr
