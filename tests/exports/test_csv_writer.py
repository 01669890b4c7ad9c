"""The CSV writer: RFC 4180 quoting, UTF-8 with an optional BOM, the configured delimiter,
typed values, and formula injection neutralised while numbers stay numbers."""

from __future__ import annotations

import csv
import io
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from exports.configs.options import FormatOptions
from exports.files.csv_writer import BOM, csv_text
from exports.files.neutralise import neutralise
from platforms.demo.hostile import HOSTILE_VALUES, LONG_VALUES


def parse(text: str, delimiter: str = ",") -> list[list[str]]:
    return list(csv.reader(io.StringIO(text.removeprefix(BOM), newline=""), delimiter=delimiter))


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("plain", "plain"),
        ("a,b", '"a,b"'),
        ('say "hi"', '"say ""hi"""'),
        ("two\nlines", '"two\nlines"'),
        ("cr\ronly", '"cr\ronly"'),
        ("", ""),
        (None, ""),
    ],
)
def test_rfc_4180_quoting(value: str | None, written: str) -> None:
    assert csv_text(["h", "i"], [[value, "x"]]) == f"h,i\r\n{written},x\r\n"


def test_a_row_of_one_empty_field_is_not_a_blank_line() -> None:
    assert csv_text(["h"], [[""], [None]]) == 'h\r\n""\r\n""\r\n'


def test_records_end_in_crlf_and_the_bom_is_optional() -> None:
    assert csv_text(["a", "b"], [["1", "2"]]) == "a,b\r\n1,2\r\n"
    with_bom = csv_text(["a"], [["é"]], FormatOptions(bom=True))
    assert with_bom.startswith(BOM) and with_bom.encode("utf-8")[:3] == b"\xef\xbb\xbf"


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_the_configured_delimiter(delimiter: str) -> None:
    text = csv_text(["a", "b"], [[f"x{delimiter}y", "z"]], FormatOptions(delimiter=delimiter))
    assert text.splitlines()[0] == f"a{delimiter}b"
    assert parse(text, delimiter) == [["a", "b"], [f"x{delimiter}y", "z"]]


def test_typed_values() -> None:
    options = FormatOptions(date_format="%Y-%m-%d %H:%M", time_zone="Asia/Tokyo")
    row = [Decimal("12.30"), Decimal("-0.50"), Decimal("1E+2"), 7, True, False,
           datetime(2024, 1, 1, 15, 30, tzinfo=UTC), date(2024, 2, 29)]  # fmt: skip
    assert parse(csv_text(list("abcdefgh"), [row], options))[1] == [
        "12.30", "-0.50", "100", "7", "true", "false", "2024-01-02 00:30", "2024-02-29",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "text", ["=1+2", "+1-555-0100", "-2+3", "@SUM(A1)", "\tTabbed", "\rReturn", "=HYPERLINK()"]
)
def test_formulas_are_neutralised(text: str) -> None:
    assert parse(csv_text(["h"], [[text]]))[1] == ["'" + text]


@pytest.mark.parametrize("number", [Decimal("-12.30"), -5, Decimal("+1")])
def test_numbers_stay_numbers(number: Decimal | int) -> None:
    assert parse(csv_text(["h"], [[number]]))[1] == [str(number).lstrip("+")]


def test_text_that_is_a_plain_number_is_not_touched() -> None:
    assert neutralise("-12.30") == "-12.30" and neutralise("+5") == "+5"
    assert neutralise("-12.30x") == "'-12.30x"


def test_every_hostile_value_round_trips_inert() -> None:
    texts = [v.text for v in HOSTILE_VALUES + LONG_VALUES]
    rows = parse(csv_text(["h"], [[t] for t in texts]))[1:]
    assert [r[0] for r in rows] == [neutralise(t) for t in texts]
    for (cell,) in rows:
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))


def test_header_titles_are_neutralised_too() -> None:
    assert csv_text(["=bad", "ok"], []) == "'=bad,ok\r\n"
