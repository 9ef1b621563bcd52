"""The comparison behind every convergence check (medallion/verify.py): rows as multisets,
and keys held twice."""

from medallion.verify import _compare


def test_a_comparison_counts_missing_extra_and_duplicated_rows_and_shows_examples(spark):
    expected = spark.createDataFrame([(1, "a"), (2, "b"), (3, "c"), (3, "c")], "id int, value string")
    actual = spark.createDataFrame([(1, "a"), (2, "B"), (3, "c"), (4, "d"), (4, "e")], "id int, value string")

    verdict = _compare("t", expected, actual, ["id"])

    assert (verdict.rows, verdict.missing, verdict.extra, verdict.duplicated) == (4, 2, 3, 1)
    assert "missing e.g. [" in verdict.sample and "(2, 'b')" in verdict.sample
    assert not verdict.equal


def test_equal_sides_in_any_order_compare_equal(spark):
    rows = [(1, ["x", "y"]), (2, None)]
    expected = spark.createDataFrame(rows, "id int, rules array<string>")
    actual = spark.createDataFrame(rows[::-1], "id int, rules array<string>")

    verdict = _compare("t", expected, actual, ["id"])

    assert verdict.equal and verdict.rows == 2 and verdict.sample == ""
    empty = _compare("t", expected.limit(0), actual.limit(0), ["id"])
    assert empty.equal and empty.rows == 0
