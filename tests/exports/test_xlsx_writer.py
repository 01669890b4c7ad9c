"""The XLSX writer, read back with openpyxl: typed cells, text never a formula, control
characters, long strings, and the sheet split (with a small limit)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import openpyxl

from exports.configs.options import FormatOptions
from exports.files.xlsx_writer import MAX_CELL_UNITS, XlsxWriter, excel_date_format, sheet_name
from platforms.demo.hostile import HOSTILE_VALUES


def write(path: Path, rows: list[list[Any]], **kwargs: Any) -> XlsxWriter:
    options = kwargs.pop("options", FormatOptions())
    writer = XlsxWriter(path, options, **kwargs)
    writer.sheet("orders", [f"c{i}" for i in range(len(rows[0]) if rows else 1)])
    writer.rows(rows)
    writer.close()
    return writer


def cells(path: Path) -> list[list[Any]]:
    book = openpyxl.load_workbook(path)
    return [[c for c in row] for row in book.worksheets[0].iter_rows(min_row=2)]


def test_numbers_dates_booleans_and_text(tmp_path: Path) -> None:
    path = tmp_path / "a.xlsx"
    options = FormatOptions(time_zone="Asia/Tokyo", date_format="%d.%m.%Y %H:%M")
    row = [Decimal("12.30"), -5, 1.5, True, datetime(2024, 1, 1, 15, 0, tzinfo=UTC),
           date(2024, 2, 29), "00123", None, 12345678901234567]  # fmt: skip
    write(path, [row], options=options)
    (got,) = cells(path)
    assert [c.data_type for c in got[:4]] == ["n", "n", "n", "b"]
    assert [c.value for c in got[:4]] == [12.3, -5, 1.5, True]
    assert got[4].is_date and got[4].value == datetime(2024, 1, 2, 0, 0)  # in Tokyo
    assert got[4].number_format == "dd.mm.yyyy hh:mm"
    assert got[5].is_date and got[5].value == datetime(2024, 2, 29)
    assert got[6].data_type == "s" and got[6].value == "00123"
    assert got[7].value is None
    # 17 digits do not survive a double: kept exact as text.
    assert got[8].data_type == "s" and got[8].value == "12345678901234567"


def test_text_is_never_a_formula(tmp_path: Path) -> None:
    path = tmp_path / "f.xlsx"
    texts = ["=1+2", "+SUM(1,2)", "-2+3", "@SUM(A1)", "\tTab", "plain", "-5"]
    write(path, [[t] for t in texts])
    got = [row[0] for row in cells(path)]
    assert all(c.data_type == "s" for c in got)
    assert [c.value for c in got] == texts
    assert [c.quotePrefix for c in got] == [True] * 5 + [False, False]


def test_control_characters_become_the_replacement_character(tmp_path: Path) -> None:
    path = tmp_path / "c.xlsx"
    write(path, [["a\x00b\x07c\x1bd\tE\nF\rG\r\nH\x7f"]])
    assert cells(path)[0][0].value == "a\ufffdb\ufffdc\ufffdd\tE\nF\nG\nH\x7f"


def test_long_strings_are_cut_with_a_marker_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "l.xlsx"
    long_text = "x" * 40_000
    emoji_text = "🎉" * 20_000  # 40,000 UTF-16 units
    writer = write(path, [[long_text], [emoji_text], ["y" * MAX_CELL_UNITS]])
    first, second, third = (row[0].value for row in cells(path))
    assert writer.cut_cells == 2
    assert len(first) <= MAX_CELL_UNITS and first.startswith("x" * 30_000)
    assert "more characters; XLSX cells hold 32,767" in first
    assert len(second.encode("utf-16-le")) // 2 <= MAX_CELL_UNITS and "cut:" in second
    assert third == "y" * MAX_CELL_UNITS  # exactly at the limit: untouched


def test_rows_continue_on_a_new_sheet_with_the_header(tmp_path: Path) -> None:
    path = tmp_path / "s.xlsx"
    writer = XlsxWriter(path, max_rows_per_sheet=3)
    writer.sheet("orders", ["n", "name"])
    writer.rows([[i, f"row {i}"] for i in range(8)])
    writer.close()
    book = openpyxl.load_workbook(path)
    assert book.sheetnames == ["orders", "orders (2)", "orders (3)"]
    sheets = [[[c.value for c in r] for r in ws.iter_rows()] for ws in book.worksheets]
    assert all(sheet[0] == ["n", "name"] for sheet in sheets)
    assert [len(sheet) - 1 for sheet in sheets] == [3, 3, 2]
    assert [r[0] for sheet in sheets for r in sheet[1:]] == list(range(8))
    assert writer.rows_written == 8


def test_sheet_names_are_valid() -> None:
    assert sheet_name("a/b:c*d?[e]") == "a_b_c_d__e_"
    assert len(sheet_name("x" * 50, 12)) == 31 and sheet_name("x" * 50, 12).endswith(" (12)")


def test_excel_date_formats() -> None:
    assert excel_date_format("%Y-%m-%d %H:%M:%S") == "yyyy-mm-dd hh:mm:ss"
    assert excel_date_format("%d/%m/%Y") == "dd/mm/yyyy"
    assert excel_date_format("%d %B %Y at %H") == 'dd mmmm yyyy" at "hh'


def test_every_hostile_value_is_inert(tmp_path: Path) -> None:
    path = tmp_path / "h.xlsx"
    write(path, [[v.text] for v in HOSTILE_VALUES])
    for cell in (row[0] for row in cells(path)):
        assert cell.data_type == "s"
        if str(cell.value).startswith(("=", "+", "-", "@", "\t", "\r")):
            assert cell.quotePrefix
