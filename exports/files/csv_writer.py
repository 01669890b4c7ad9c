"""THE CSV writer: exports and the query endpoint's `text/csv` both write through it.

RFC 4180: fields holding the delimiter, a double quote, CR or LF are quoted, quotes are
doubled, records end in CRLF. UTF-8, optionally with a byte-order mark (Excel needs it to
read UTF-8). Text that a spreadsheet would run as a formula is neutralised
(exports.files.neutralise); numbers stay numbers. A missing value and the empty string are both
an empty field.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal
from io import StringIO
from typing import Any, TextIO

import pyarrow as pa

from exports.configs.options import FormatOptions
from exports.files.csv_arrow import column_text, records_text
from exports.files.neutralise import neutralise

BOM = "\ufeff"
RECORD_END = "\r\n"


def text_value(value: Any, options: FormatOptions) -> str:
    """One value as CSV text: decimals with their exact digits, booleans as true/false,
    timestamps in the configured zone and date format, text neutralised."""
    if value is None:
        return ""
    if isinstance(value, str):
        return neutralise(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format(value, "f")  # never an exponent: 1E+2 would read as text or a float
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(options.zone)
        return value.strftime(options.date_format)
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


class CsvWriter:
    """Writes a header and rows to a text stream opened with newline="" (the writer ends
    records itself). Rows are sequences in header order; nothing is buffered here, so
    memory stays flat however many rows pass."""

    def __init__(self, stream: TextIO, options: FormatOptions | None = None) -> None:
        self.options = options or FormatOptions()
        self._stream = stream
        self._writer = csv.writer(
            stream,
            delimiter=self.options.delimiter,
            quotechar='"',
            doublequote=True,
            quoting=csv.QUOTE_MINIMAL,
            lineterminator=RECORD_END,
        )
        self.rows_written = 0
        if self.options.bom:
            stream.write(BOM)

    def header(self, titles: Sequence[str]) -> None:
        # Titles come from configurations: neutralised like any other text.
        self._writer.writerow([neutralise(t) for t in titles])

    def rows(self, rows: Iterable[Sequence[Any]]) -> None:
        options = self.options
        for row in rows:
            self._writer.writerow([text_value(v, options) for v in row])
            self.rows_written += 1

    def batches(self, batches: Iterable[pa.RecordBatch]) -> None:
        """Arrow batches in header order: the same bytes as rows() over their Python
        values, with the per-value formatting done a column at a time (csv_arrow)."""
        options = self.options

        def fallback(value: Any) -> str:
            return text_value(value, options)

        for batch in batches:
            # A batch without columns has no rows to show: produce's Python rows (a zip of
            # no columns) never yielded any either.
            if not batch.num_rows or not batch.num_columns:
                continue
            columns = [column_text(c, options, fallback) for c in batch.columns]
            self._stream.write(records_text(columns, options.delimiter, RECORD_END))
            self.rows_written += batch.num_rows


def csv_text(
    titles: Sequence[str], rows: Iterable[Sequence[Any]], options: FormatOptions | None = None
) -> str:
    """A small table as CSV text (the query endpoint's results are bounded in size)."""
    buffer = StringIO(newline="")
    writer = CsvWriter(buffer, options)
    writer.header(titles)
    writer.rows(rows)
    return buffer.getvalue()
