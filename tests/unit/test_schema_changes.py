"""What Bronze does with each change of a CDC source's schema (bronze/schema.py)."""

from __future__ import annotations

import pytest

from bronze.schema import SchemaChange, SourceColumn, holds, reconcile, spark_type, unexplained_fields
from bronze.tables import PRODUCT_CATALOG

POSTGRES_TO_SPARK = {
    ("integer", None, None): "int",
    ("bigint", None, None): "bigint",
    ("smallint", None, None): "smallint",
    ("numeric", 12, 2): "decimal(12,2)",
    ("numeric", None, None): "string",
    ("numeric", 40, 2): "string",
    ("text", None, None): "string",
    ("character varying", None, None): "string",
    ("boolean", None, None): "boolean",
    ("date", None, None): "date",
    ("timestamp with time zone", None, None): "timestamp",
    ("timestamp without time zone", None, None): "bigint",
    ("double precision", None, None): "double",
    ("jsonb", None, None): "string",
    ("bytea", None, None): "string",
}


@pytest.mark.parametrize(("postgres", "spark"), POSTGRES_TO_SPARK.items())
def test_a_source_type_lands_as_the_spark_type_that_holds_debeziums_form_of_it(postgres, spark):
    assert spark_type(*postgres) == spark


@pytest.mark.parametrize(
    ("declared", "source"),
    [
        ("bigint", "int"),
        ("int", "smallint"),
        ("double", "float"),
        ("decimal(14,4)", "decimal(12,2)"),
        ("decimal(12,2)", "int"),
        ("string", "bigint"),
        ("string", "decimal(12,2)"),
        ("date", "date"),
    ],
)
def test_a_declared_type_holds_narrower_source_types(declared, source):
    assert holds(declared, source)


@pytest.mark.parametrize(
    ("declared", "source"),
    [
        ("int", "bigint"),
        ("decimal(12,2)", "decimal(14,4)"),
        ("decimal(12,2)", "decimal(13,2)"),
        ("decimal(5,2)", "int"),
        ("boolean", "string"),
        ("timestamp", "bigint"),
        ("bigint", "double"),
    ],
)
def test_a_declared_type_does_not_hold_wider_or_other_source_types(declared, source):
    assert not holds(declared, source)


def source_of(table, **changes):
    columns = {name: SourceColumn(kind, kind) for name, kind in table.columns.items()}
    for name, kind in changes.items():
        if kind is None:
            del columns[name]
        else:
            columns[name] = SourceColumn(kind.replace("decimal", "numeric"), kind)
    return columns


def test_an_unchanged_source_carries_nothing():
    assert reconcile(PRODUCT_CATALOG, {}, source_of(PRODUCT_CATALOG)) == {}


def test_a_column_added_at_the_source_is_carried_with_its_type():
    source = source_of(PRODUCT_CATALOG, weight_grams="int")
    assert reconcile(PRODUCT_CATALOG, {}, source) == {"weight_grams": "int"}
    assert reconcile(PRODUCT_CATALOG, {"weight_grams": "int"}, source) == {"weight_grams": "int"}


def test_a_carried_column_dropped_at_the_source_stays_carried():
    assert reconcile(PRODUCT_CATALOG, {"weight_grams": "int"}, source_of(PRODUCT_CATALOG)) == {
        "weight_grams": "int"
    }


def test_a_dropped_declared_column_stops_with_what_changed_and_what_to_edit():
    with pytest.raises(SchemaChange) as stopped:
        reconcile(PRODUCT_CATALOG, {}, source_of(PRODUCT_CATALOG, description=None))
    message = str(stopped.value)
    assert message.startswith(
        "the source schema of retail.product_catalog (Bronze table "
        "hudi_product_catalog_bronze) changed: column description (string) "
        "was dropped. Bronze stopped before landing this batch, and its "
        "messages wait in Kafka."
    )
    assert "edit the table's `columns` in bronze/tables.py" in message


def test_a_retype_the_declared_type_cannot_hold_stops():
    with pytest.raises(
        SchemaChange,
        match=r"column unit_price changed type to numeric\(14,4\), "
        r"which decimal\(12,2\) cannot hold",
    ):
        reconcile(PRODUCT_CATALOG, {}, source_of(PRODUCT_CATALOG, unit_price="decimal(14,4)"))


def test_a_retype_of_a_carried_column_stops_too():
    with pytest.raises(SchemaChange, match="column weight_grams changed type to bigint"):
        reconcile(PRODUCT_CATALOG, {"weight_grams": "int"}, source_of(PRODUCT_CATALOG, weight_grams="bigint"))


def test_a_retype_the_declared_type_holds_changes_nothing():
    assert reconcile(PRODUCT_CATALOG, {}, source_of(PRODUCT_CATALOG, unit_price="decimal(10,2)")) == {}


def test_a_missing_source_table_says_where_it_looked():
    with pytest.raises(
        SchemaChange,
        match="the source table retail.product_catalog of Bronze "
        "table hudi_product_catalog_bronze was not found",
    ):
        reconcile(PRODUCT_CATALOG, {}, {})


def test_fields_the_landed_columns_do_not_explain_are_named():
    declared = ",".join(PRODUCT_CATALOG.columns)
    assert unexplained_fields(PRODUCT_CATALOG, PRODUCT_CATALOG, [declared]) is None
    assert unexplained_fields(PRODUCT_CATALOG, PRODUCT_CATALOG, []) is None
    assert (
        unexplained_fields(PRODUCT_CATALOG, PRODUCT_CATALOG, [declared, f"{declared},weight"])
        == "fields ['weight'] it does not know"
    )
    without_brand = declared.replace(",brand", "")
    assert (
        unexplained_fields(PRODUCT_CATALOG, PRODUCT_CATALOG, [declared, f"{without_brand},weight"])
        == "fields ['weight'] it does not know and no declared fields ['brand']"
    )
