"""Every file format an export can write, declared once: its name in configurations, its
extension, the media type its download carries, whether it holds one table or several,
and the function writing it. A new format is one entry here plus its writer module.

Writers take (path, options, tables, max rows per XLSX sheet) and answer (rows written,
XLSX cells cut).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from exports.configs.options import FormatOptions
from exports.files.csv_writer import CsvWriter
from exports.files.jsonl_writer import write_jsonl
from exports.files.parquet_writer import write_parquet
from exports.files.tables import Table
from exports.files.xlsx_writer import XlsxWriter
from exports.files.zip_writer import ZipWriter

Tables = Iterator[Table]
Writer = Callable[[Path, FormatOptions, Tables, int], tuple[int, int]]


@dataclass(frozen=True)
class FileFormat:
    name: str
    extension: str
    content_type: str
    write: Writer
    # A zip holds several tables (a bundle's parts), one member each; the others hold one
    # table (XLSX: one table, over several sheets past Excel's row limit).
    several_tables: bool = False
    # The format_options its writer reads (exports.configs.options.FormatOptions); a zip
    # also reads those of its member format. Any other option given is refused, since
    # one the writer ignores would be a setting the user believes in and never gets.
    options: tuple[str, ...] = ()


def _csv(path: Path, options: FormatOptions, tables: Tables, max_rows: int) -> tuple[int, int]:
    table = next(tables)
    if table.copy_csv is not None:
        rows = table.copy_csv(options, path)
        if rows is not None:
            return rows, 0
    with path.open("w", encoding="utf-8", newline="") as stream:
        return csv_table(CsvWriter(stream, options), table), 0


def csv_table(writer: CsvWriter, table: Table) -> int:
    """Rows written: Arrow batches when the table has them (the vectorised path), else
    the Python rows (query parts, already Python values)."""
    writer.header(table.titles)
    if table.batches is not None:
        writer.batches(table.batches)
    else:
        writer.rows(table.rows)
    return writer.rows_written


def _xlsx(path: Path, options: FormatOptions, tables: Tables, max_rows: int) -> tuple[int, int]:
    workbook = XlsxWriter(path, options, max_rows_per_sheet=max_rows)
    for table in tables:
        workbook.sheet(table.name, table.titles)
        workbook.rows(table.rows)
    workbook.close()
    return workbook.rows_written, workbook.cut_cells


def _one_table(
    write: Callable[[Path, FormatOptions, Table], int],
) -> Writer:
    def writer(path: Path, options: FormatOptions, tables: Tables, _: int) -> tuple[int, int]:
        return write(path, options, next(tables)), 0

    return writer


def _zip(path: Path, options: FormatOptions, tables: Tables, max_rows: int) -> tuple[int, int]:
    """One member per table, in `member_format`; CSV members stream into the archive."""
    member_format = FORMATS[options.member_format]
    archive = ZipWriter(path)
    rows = cut = 0
    try:
        for table in tables:
            member_name = f"{table.name}{member_format.extension}"
            if member_format.name == "csv":
                with archive.text_member(member_name) as stream:
                    rows += csv_table(CsvWriter(stream, options), table)
                continue
            member = path.with_name(f"{path.name}.member{member_format.extension}")
            try:
                written, cells = member_format.write(member, options, iter([table]), max_rows)
                archive.add_file(member, member_name)
            finally:
                member.unlink(missing_ok=True)
            rows, cut = rows + written, cut + cells
    finally:
        archive.close()
    return rows, cut


FORMATS: dict[str, FileFormat] = {
    f.name: f
    for f in (
        FileFormat(
            "csv",
            ".csv",
            "text/csv",
            _csv,
            options=("delimiter", "bom", "date_format", "time_zone"),
        ),
        FileFormat(
            "xlsx",
            ".xlsx",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            _xlsx,
            options=("date_format", "time_zone"),
        ),
        FileFormat(
            "zip",
            ".zip",
            "application/zip",
            _zip,
            several_tables=True,
            options=("member_format",),
        ),
        # Instants in UTC, as every Parquet reader expects them: no zone, no text format.
        FileFormat(
            "parquet", ".parquet", "application/vnd.apache.parquet", _one_table(write_parquet)
        ),
        FileFormat(
            "jsonl",
            ".jsonl",
            "application/jsonl",
            _one_table(write_jsonl),
            options=("time_zone",),
        ),
    )
}
# What a zip's members can be: every format of one table.
MEMBER_FORMATS = tuple(name for name, f in FORMATS.items() if not f.several_tables)
CONTENT_TYPES = {name: f.content_type for name, f in FORMATS.items()}
EXTENSIONS = {name: f.extension for name, f in FORMATS.items()}


def options_read(file_format: str, member_format: str) -> tuple[str, ...]:
    """The format_options a file of `file_format` reads (a zip: its own and its members')."""
    own = FORMATS[file_format]
    if not own.several_tables or member_format not in FORMATS:
        return own.options
    return own.options + FORMATS[member_format].options


def write_file(
    file_format: str, options: FormatOptions, tables: Iterator[Table], path: Path, max_rows: int
) -> tuple[int, int]:
    """(rows written, XLSX cells cut) after writing every table to `path`."""
    return FORMATS[file_format].write(path, options, tables, max_rows)
