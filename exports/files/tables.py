"""What a writer writes: tables of a file, each a title row and a stream of values, and
for record parts the SQL they come from (so DuckDB can write the whole file itself)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from exports.configs.options import FormatOptions
from exports.files.csv_copy import CopySource


@dataclass(frozen=True)
class SqlPart:
    """A record part as SQL on the run's snapshot connection: the Parquet and JSON Lines
    writers COPY it, DuckDB formatting and writing in parallel."""

    cursor: duckdb.DuckDBPyConnection
    source: CopySource


@dataclass(frozen=True)
class Table:
    """One part of a file: its title row and a stream of value rows. A record part also
    offers the same rows as Arrow `batches` (both views share one lazy stream, so a writer
    consumes one or the other): the CSV writer formats those a column at a time.

    `names` are the column names of the formats with names rather than headers (Parquet,
    JSON Lines): the field names, or a title given in the configuration."""

    name: str
    titles: list[str]
    rows: Iterator[Sequence[Any]]
    batches: Iterator[pa.RecordBatch] | None = None
    # A record part can also write itself as a whole CSV file with DuckDB's COPY
    # (exports.files.csv_copy): (options, path) -> rows written, or None to use the writer.
    copy_csv: Callable[[FormatOptions, Path], int | None] | None = None
    sql: SqlPart | None = None
    names: list[str] | None = None
    # The Arrow types of the columns when no row can say (a part reading no store).
    schema: pa.Schema | None = None

    @property
    def column_names(self) -> list[str]:
        return self.names if self.names is not None else self.titles
