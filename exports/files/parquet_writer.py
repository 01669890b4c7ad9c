"""Parquet files: one table, typed as the warehouse holds it. Money and other decimals
are DECIMAL logical types (exact), timestamps are instants (isAdjustedToUTC, microseconds),
and a file without rows still carries its schema.

A record part is written by DuckDB's own COPY (parallel, streaming); a query part (small,
already Python values) through pyarrow.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from exports.configs.options import FormatOptions
from exports.files.sql_columns import identifier, unique_names
from exports.files.tables import Table
from warehouse.tables import quote_literal


def write_parquet(path: Path, options: FormatOptions, table: Table) -> int:
    """Rows written to `path`. `options` has nothing for Parquet (values keep their types;
    timestamps are UTC instants, which every reader shows in its own zone)."""
    names = unique_names(table.column_names)
    if table.sql is not None:
        source = table.sql.source
        columns = [f"{e} AS {identifier(n)}" for e, n in zip(source.columns, names, strict=True)]
        copy = f"COPY ({source.select(columns)}) TO {quote_literal(str(path))} (FORMAT parquet)"
        ((rows,),) = table.sql.cursor.execute(copy).fetchall()
        return int(rows)
    values = list(table.rows)
    arrays = []
    for index in range(len(names)):
        column = [row[index] for row in values]
        known = table.schema.field(index).type if table.schema is not None else None
        if known is None and all(v is None for v in column):
            known = pa.string()  # nothing to infer a type from
        arrays.append(pa.array(column, type=known))
    pq.write_table(pa.Table.from_arrays(arrays, names=names), path)
    return len(values)
