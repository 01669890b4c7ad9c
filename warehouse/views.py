"""DuckDB SQL for a table's rows in a snapshot: a typed scan of its Parquet files.

Every column is cast to the DuckDB type of its Arrow field, so queries see exact types
(DECIMAL(18,2) money, TIMESTAMP WITH TIME ZONE) whatever the files hold; a cast to the
type a column already has is dropped by DuckDB's binder, so it costs nothing and does not
block filter pushdown. A table without files is a typed empty relation.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from warehouse.schemas import TableSpec
from warehouse.tables import STORE_COLUMN


def duckdb_type(data_type: pa.DataType) -> str:
    """The DuckDB type name of an Arrow type used in warehouse.schemas."""
    if pa.types.is_string(data_type) or pa.types.is_large_string(data_type):
        return "VARCHAR"
    if pa.types.is_decimal(data_type):
        return f"DECIMAL({data_type.precision},{data_type.scale})"
    if pa.types.is_timestamp(data_type):
        return "TIMESTAMP WITH TIME ZONE" if data_type.tz else "TIMESTAMP"
    simple = {
        pa.int64(): "BIGINT",
        pa.int32(): "INTEGER",
        pa.bool_(): "BOOLEAN",
        pa.date32(): "DATE",
        pa.float64(): "DOUBLE",
    }
    if data_type in simple:
        return simple[data_type]
    raise TypeError(f"no DuckDB type for {data_type}")


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def scan_sql(table: TableSpec, files: Sequence[str]) -> str:
    """SELECT of `table`'s columns, in schema order, over `files` (possibly none)."""
    if not files:
        columns = ", ".join(
            f"CAST(NULL AS {duckdb_type(f.type)}) AS {quote_identifier(f.name)}"
            for f in table.schema
        )
        return f"SELECT {columns} LIMIT 0"
    columns = ", ".join(
        f"CAST({quote_identifier(f.name)} AS {duckdb_type(f.type)}) AS {quote_identifier(f.name)}"
        for f in table.schema
    )
    file_list = "[" + ", ".join(quote_literal(f) for f in files) + "]"
    # Delta keeps partition values in the path only; hive partitioning reads store_id back,
    # typed explicitly so a store id never gets inferred as a number.
    options = (
        f"hive_partitioning = true, hive_types = {{'{STORE_COLUMN}': 'VARCHAR'}}"
        if table.partitioned
        else "hive_partitioning = false"
    )
    return f"SELECT {columns} FROM read_parquet({file_list}, {options})"
