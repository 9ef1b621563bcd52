"""Erasure's pure half: which rows and text hold a person's data, and what is left of them;
the declarations of personal data."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from bronze.tables import CUSTOMER_MASTER, SALES_TRANSACTIONS, WEB_CLICKSTREAMS, PersonalData
from operations import erasure, redaction

PERSONAL = tuple(CUSTOMER_MASTER.personal.erased)


def test_a_value_is_found_standing_alone_not_inside_another_word():
    pattern = redaction.occurrences(["Ann", "ann.lee@example.com"])
    assert re.search(pattern, '{"first_name":"Ann"}')
    assert re.search(pattern, "mail ann.lee@example.com now")
    assert not re.search(pattern, "Anna and Joanne")
    assert redaction.occurrences(["", None]) is None


def test_rows_about_or_mentioning_the_customer_are_redacted_and_the_others_left_out(spark):
    frame = spark.createDataFrame(
        [
            (42, "Ann", "ann.lee@example.com", "Oslo", "europe", '["ann.lee@example.com"]'),
            (7, "Bo", "bo@example.com", "Rome", "europe", '["ann.lee@example.com", "x"]'),
            (8, "Cy", "cy@example.com", "Lima", "latin_america", "[]"),
        ],
        "customer_id long, first_name string, email string, city string, region string, sample_values string",
    )
    rewritten = redaction.redact(frame, "customer_id", [42], PERSONAL, ["Ann", "ann.lee@example.com"])
    redacted = {r.customer_id: r for r in rewritten.collect()}
    assert set(redacted) == {42, 7}, "a row neither about nor mentioning her was rewritten"
    about = redacted[42]
    assert (about.first_name, about.email, about.city) == (None, None, None)
    assert about.region == "europe", "a column that is not personal was erased"
    assert json.loads(about.sample_values) == ["[erased]"]
    mentioning = redacted[7]
    assert (mentioning.first_name, mentioning.email, mentioning.city) == ("Bo", "bo@example.com", "Rome")
    assert json.loads(mentioning.sample_values) == ["[erased]", "x"]


def test_a_quarantined_message_naming_the_customer_loses_its_personal_fields(spark):
    raw = json.dumps(
        {
            "before": None,
            "after": {"customer_id": "42", "first_name": "Ann", "birth_date": 7300, "country": "NO"},
            "op": "x",
        }
    )
    frame = spark.createDataFrame(
        [
            ('{"customer_id":42}', raw, "unknown op 'x'", 5),
            ('{"customer_id":420}', raw.replace('"42"', '"420"'), "e", 6),
        ],
        "raw_key string, raw_value string, error string, _kafka_offset long",
    )
    [row] = redaction.redact(frame, "customer_id", [42], PERSONAL, []).collect()
    assert row._kafka_offset == 5, "customer 420 is not customer 42"
    after = json.loads(row.raw_value)["after"]
    assert after == {"customer_id": "42", "first_name": None, "birth_date": None, "country": "NO"}
    assert row.raw_key == '{"customer_id":42}' and row.error == "unknown op 'x'"


def test_text_files_are_redacted_in_place(tmp_path):
    page = tmp_path / "docs" / "validations" / "run.html"
    page.parent.mkdir(parents=True)
    page.write_text("<td>ann.lee@example.com</td><td>annabel@example.com</td>")
    untouched = tmp_path / "gx" / "config.yml"
    untouched.parent.mkdir()
    untouched.write_text("ann.lee@example.com")
    assert redaction.redact_text_files(tmp_path, ["ann.lee@example.com"]) == [page]
    assert page.read_text() == "<td>[erased]</td><td>annabel@example.com</td>"


def test_the_customer_is_the_one_table_with_personal_data():
    assert erasure.personal_table("customer_id") is CUSTOMER_MASTER
    erased = erasure._erased_values(CUSTOMER_MASTER, 42)
    assert erased["email"] == "erased-42@erased.example" and erased["phone"] is None
    # What Gold groups sales by must survive erasure.
    assert {"country", "region", "loyalty_tier"}.isdisjoint(CUSTOMER_MASTER.personal.erased)
    with pytest.raises(Exception, match="no Bronze table declares personal data about 'order_id'"):
        erasure.personal_table("order_id")


def test_the_placeholders_are_not_searched_for_in_text():
    images = [
        {"customer_id": 42, "email": "erased-42@erased.example", "phone": "+47 555 0101"},
        {"customer_id": 42, "email": "ann.lee@example.com", "phone": None},
    ]
    assert erasure._searched_values(CUSTOMER_MASTER, images) == {"+47 555 0101", "ann.lee@example.com"}


@pytest.mark.parametrize(
    "personal, message",
    [
        (PersonalData("email", {"email": None}, ()), "subject must be the record key"),
        (PersonalData("customer_id", {"nickname": None}, ()), "personal columns ['nickname'] are not"),
        (PersonalData("customer_id", {"country": None}, ()), "['country'] locate the row"),
        (PersonalData("customer_id", {"email": None}, ("phone",)), "searched columns ['phone'] must"),
    ],
)
def test_a_wrong_personal_data_declaration_fails_with_what_to_fix(personal, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        dataclasses.replace(CUSTOMER_MASTER, personal=personal)


def test_only_a_cdc_table_declares_personal_data_as_it_is_erased_at_its_source():
    assert SALES_TRANSACTIONS.source_table == "retail.sales_transactions"
    with pytest.raises(ValueError, match="only a CDC table can declare it"):
        dataclasses.replace(WEB_CLICKSTREAMS, personal=PersonalData("event_id", {}, ()))
