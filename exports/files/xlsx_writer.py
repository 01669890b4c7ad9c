"""The XLSX writer: streaming (xlsxwriter's constant_memory: each row is flushed to disk once
the next begins), typed cells, and the documented rules for what a cell cannot hold.

- Numbers are numbers and booleans booleans. An integer or decimal with more than 15
  significant digits is written as text, since Excel's doubles would change its digits.
- Timestamps are date cells, shown in the configured zone (Excel has no zones) with the
  configured date format mapped to an Excel number format.
- Text is always a string cell (write_string, never a formula). Text a spreadsheet would
  run as a formula also gets Excel's quote-prefix flag: the value is unchanged and stays
  text even when a person edits the cell.
- Control characters XML cannot hold (U+0000-U+0008, U+000B, U+000C, U+000E-U+001F,
  U+FFFE, U+FFFF) become U+FFFD; tab and LF stay; CR LF and a lone CR become LF, Excel's
  line break in a cell. CSV files keep every character as it is.
- A cell holds at most 32,767 UTF-16 units. Longer text is cut to fit and ends with a
  marker saying how many characters were cut; `cut_cells` counts them for the job's log.
- More than `max_rows_per_sheet` data rows (1,048,575 by default, Excel's limit less the
  header) continue on a new sheet, "<name> (2)", with the header repeated.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import xlsxwriter
from xlsxwriter.format import Format
from xlsxwriter.worksheet import Worksheet

from exports.configs.options import FormatOptions
from exports.files.neutralise import is_dangerous

EXCEL_MAX_ROWS = 1_048_576
MAX_DATA_ROWS = EXCEL_MAX_ROWS - 1
MAX_CELL_UNITS = 32_767
MAX_EXACT_DIGITS = 15
_MARKER_ROOM = 80  # UTF-16 units kept free for the cut marker
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_NEEDS_CLEANING = re.compile("[\x00-\x08\x0b-\x1f\ufffe\uffff]")  # _XML_INVALID and CR
_SHEET_NAME_INVALID = re.compile(r"[\[\]:*?/\\\x00-\x1f]")
_STRFTIME_TO_EXCEL = {
    "%Y": "yyyy", "%y": "yy", "%m": "mm", "%d": "dd", "%H": "hh", "%I": "hh",
    "%M": "mm", "%S": "ss", "%p": "AM/PM", "%b": "mmm", "%B": "mmmm", "%a": "ddd",
    "%A": "dddd", "%f": "000", "%%": "%",
}  # fmt: skip
_STRFTIME_TOKEN = re.compile(r"%.")
_EXCEL_PLAIN = set(" -/:.,()")


def excel_date_format(strftime_format: str) -> str:
    """The Excel number format closest to a strftime format. Directives Excel has no
    equivalent for (zones, week numbers) are dropped; literal text is quoted."""
    parts: list[str] = []
    position = 0
    for match in _STRFTIME_TOKEN.finditer(strftime_format):
        if match.start() > position:
            parts.append(_excel_literal(strftime_format[position : match.start()]))
        parts.append(_STRFTIME_TO_EXCEL.get(match.group(), ""))
        position = match.end()
    parts.append(_excel_literal(strftime_format[position:]))
    return "".join(parts).strip() or "yyyy-mm-dd hh:mm:ss"


def _excel_literal(text: str) -> str:
    # Separators Excel shows as they are; anything else is quoted so it is not a code.
    if all(c in _EXCEL_PLAIN for c in text):
        return text
    return '"' + text.replace('"', "") + '"'


def _utf16_units(text: str) -> int:
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def fit_cell(text: str) -> tuple[str, bool]:
    """(`text` as a cell can hold it, whether it was cut)."""
    if _NEEDS_CLEANING.search(text) is not None:  # one scan for the common clean text
        text = _XML_INVALID.sub("\ufffd", text.replace("\r\n", "\n").replace("\r", "\n"))
    if len(text) <= MAX_CELL_UNITS // 2 or _utf16_units(text) <= MAX_CELL_UNITS:
        return text, False
    room = MAX_CELL_UNITS - _MARKER_ROOM
    kept = units = 0
    for character in text:  # one pass: astral characters take two UTF-16 units
        units += 2 if ord(character) > 0xFFFF else 1
        if units > room:
            break
        kept += 1
    marker = f" … [cut: {len(text) - kept:,} more characters; XLSX cells hold 32,767]"
    return text[:kept] + marker, True


def sheet_name(name: str, part: int = 1) -> str:
    """A valid, at most 31-character sheet name; `part` > 1 adds " (part)"."""
    suffix = f" ({part})" if part > 1 else ""
    base = _SHEET_NAME_INVALID.sub("_", name).strip("'") or "Sheet"
    return base[: 31 - len(suffix)] + suffix


def _exact_as_double(value: int | Decimal) -> bool:
    digits = value.as_tuple().digits if isinstance(value, Decimal) else str(abs(value))
    return len(digits) <= MAX_EXACT_DIGITS


class XlsxWriter:
    """One workbook; `sheet` starts a sheet with its header, `rows` appends data rows."""

    def __init__(
        self,
        path: Path,
        options: FormatOptions | None = None,
        *,
        max_rows_per_sheet: int = MAX_DATA_ROWS,
    ) -> None:
        if not 1 <= max_rows_per_sheet <= MAX_DATA_ROWS:
            raise ValueError(f"max_rows_per_sheet must be 1 to {MAX_DATA_ROWS}")
        self.options = options or FormatOptions()
        self._zone = self.options.zone
        self.max_rows = max_rows_per_sheet
        self.cut_cells = 0
        self.rows_written = 0
        self._book = xlsxwriter.Workbook(
            str(path),
            {
                "constant_memory": True,
                "tmpdir": str(path.parent),
                "use_zip64": True,
                "strings_to_formulas": False,
                "strings_to_numbers": False,
                "strings_to_urls": False,
            },
        )
        self._header_format = self._book.add_format({"bold": True})
        self._header_quoted = self._book.add_format({"bold": True, "quote_prefix": True})
        self._date_format = self._book.add_format(
            {"num_format": excel_date_format(self.options.date_format)}
        )
        self._day_format = self._book.add_format({"num_format": "yyyy-mm-dd"})
        self._quoted = self._book.add_format({"quote_prefix": True})
        self._used_names: set[str] = set()
        self._sheet: Worksheet | None = None
        self._titles: list[str] = []
        self._name = ""
        self._part = 1
        self._row = 0

    def sheet(self, name: str, titles: Sequence[str]) -> None:
        """Start a new sheet called `name` (made valid and unique) with a header row."""
        self._name, self._titles, self._part = name, list(titles), 1
        self._open_sheet()

    def _open_sheet(self) -> None:
        title = sheet_name(self._name, self._part)
        number = self._part
        while title.lower() in self._used_names:
            number += 1
            title = sheet_name(self._name, number)
        self._used_names.add(title.lower())
        self._sheet = self._book.add_worksheet(title)
        for column, text in enumerate(self._titles):
            self._write_text(0, column, text, self._header_format)
        self._sheet.freeze_panes(1, 0)
        self._row = 1

    def rows(self, rows: Iterable[Sequence[Any]]) -> None:
        if self._sheet is None:
            raise RuntimeError("call sheet() before rows()")
        for row in rows:
            if self._row > self.max_rows:
                self._part += 1
                self._open_sheet()
            for column, value in enumerate(row):
                self._write(self._row, column, value)
            self._row += 1
            self.rows_written += 1

    def _write(self, row: int, column: int, value: Any) -> None:
        sheet = self._sheet
        assert sheet is not None
        if value is None:
            return
        if isinstance(value, str):
            self._write_text(row, column, value)
        elif isinstance(value, bool):
            sheet.write_boolean(row, column, value)
        elif isinstance(value, int | Decimal):
            if isinstance(value, Decimal) and not value.is_finite():
                self._write_text(row, column, str(value))
            elif _exact_as_double(value):
                sheet.write_number(row, column, float(value))
            else:
                self._write_text(row, column, format(value, "f") if isinstance(value, Decimal)
                                 else str(value))  # fmt: skip
        elif isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                self._write_text(row, column, str(value))
            else:
                sheet.write_number(row, column, value)
        elif isinstance(value, datetime):
            if value.tzinfo is not None:
                value = value.astimezone(self._zone).replace(tzinfo=None)
            sheet.write_datetime(row, column, value, self._date_format)
        elif isinstance(value, date):
            sheet.write_datetime(row, column, value, self._day_format)
        else:
            self._write_text(row, column, str(value))

    def _write_text(self, row: int, column: int, text: str, style: Format | None = None) -> None:
        fitted, cut = fit_cell(text)
        self.cut_cells += cut
        if is_dangerous(fitted):
            style = self._header_quoted if style is self._header_format else self._quoted
        assert self._sheet is not None
        self._sheet.write_string(row, column, fitted, style)

    def close(self) -> None:
        if self._sheet is None:  # a workbook needs a sheet
            self.sheet("Export", self._titles)
        self._book.close()
