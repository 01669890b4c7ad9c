"""The lake's tables: their DDL from warehouse.schemas, creation, and table-wide helpers.

Every table of warehouse.schemas.TABLES is a DuckLake table `lake.<name>` with the DuckDB
types of its Arrow schema (DECIMAL(18,2) money, TIMESTAMP WITH TIME ZONE). A table of
per-store rows (spec.per_store) is sorted by store_id, not partitioned by it: DuckLake
reads every data file's statistics for each statement on a table, so a partition per store
made every statement cost the fleet's store count (docs/benchmark.md, Session 13). Sorted,
a batch of stores writes one file per table, maintenance's merges keep the file count to
the data's size, and each file's min/max store_id still prunes a one-store read to the
files holding that store. Tables are created empty, so a reader can query one before
anything was synced; a column added to a spec later is added to the table, and a table
partitioned by an earlier Quarry is made sorted, when a process next attaches the lake.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import duckdb
import pyarrow as pa

from warehouse.schemas import TABLES, TableSpec
from warehouse.transactions import transaction

STORE_COLUMN = "store_id"

_STORE_ID = re.compile(r"^[a-z0-9_]+$")


def spec(name: str) -> TableSpec:
    """The TableSpec of `name`; KeyError names the unknown table."""
    try:
        return TABLES[name]
    except KeyError:
        raise KeyError(f"{name!r} is not a warehouse table") from None


def qualified(name: str) -> str:
    """`lake.<name>` for a warehouse table; KeyError for any other name."""
    spec(name)
    return f"lake.{quote_identifier(name)}"


def clustering_key(name: str) -> tuple[str, ...]:
    """The columns whose order a store's rows are written in (after the store: sort_key),
    so each data file covers a narrow range of them and DuckDB's min/max statistics skip
    most files of a filtered read.

    Parents go by creation time then id (queries and exports filter by time); children go
    by their parent's id then their own (they are read, deleted and replaced by parent).
    Tables without either (exchange_rates) go by primary key."""
    table_spec = spec(name)
    if table_spec.parent_key is not None:
        return (table_spec.parent_key, *table_spec.primary_key)
    if "created_at" in table_spec.schema.names:
        return ("created_at", *table_spec.primary_key)
    return table_spec.primary_key


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


def store_literal(store_id: str) -> str:
    """`store_id` as a SQL string literal. Store ids are [a-z0-9_], so anything else is a bug
    or an attack and is refused rather than escaped."""
    if not _STORE_ID.match(store_id):
        raise ValueError(f"not a store id: {store_id!r}")
    return f"'{store_id}'"


def store_predicate(store_id: str | Iterable[str], alias: str | None = None) -> str:
    """SQL selecting one store's rows, e.g. `t.store_id = 'st_1'`, or several stores' (a
    fleet batch writes many stores in one statement): `t.store_id IN ('st_1', 'st_2')`."""
    column = f"{alias}.{STORE_COLUMN}" if alias else STORE_COLUMN
    if isinstance(store_id, str):
        return f"{column} = {store_literal(store_id)}"
    stores = sorted(set(store_id))
    if not stores:
        raise ValueError("a store predicate needs at least one store")
    return f"{column} IN ({', '.join(map(store_literal, stores))})"


def inserted_after(version: int) -> str:
    """SQL selecting the live rows inserted by a commit after lake snapshot `version`.

    `snapshot_id` is DuckLake's virtual column for the snapshot that inserted a row; a
    filter on it skips every data file (and inlined row) written at or before `version`, so
    reading what a run wrote costs what it wrote, not what the table holds."""
    return f"snapshot_id > {int(version)}"


def missing_ddl(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The statements that would create the missing tables of `lake` and add the columns
    their specs gained; none when the lake is up to date (a catalog query, no lock)."""
    existing: dict[str, set[str]] = {}
    for table, column in con.execute(
        "SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = 'lake'"
    ).fetchall():
        existing.setdefault(table, set()).add(column)
    partitioned = _partitioned_tables(con) if existing else set()
    statements: list[str] = []
    for name, table_spec in TABLES.items():
        if name not in existing:
            columns = ", ".join(
                f"{quote_identifier(f.name)} {duckdb_type(f.type)}" for f in table_spec.schema
            )
            statements.append(f"CREATE TABLE {qualified(name)} ({columns})")
            if table_spec.per_store:
                statements.append(_sorted_by(name))
            continue
        if name in partitioned:
            # Files written before keep their partition values; new ones have none.
            statements.append(f"ALTER TABLE {qualified(name)} RESET PARTITIONED BY")
            statements.append(_sorted_by(name))
        for field in table_spec.schema:
            if field.name not in existing[name]:
                statements.append(
                    f"ALTER TABLE {qualified(name)} ADD COLUMN {quote_identifier(field.name)} "
                    f"{duckdb_type(field.type)}"
                )
    return statements


def sort_key(name: str) -> tuple[str, ...]:
    """The order DuckLake writes a per-store table's rows in (on every INSERT and merge):
    by store, then the table's clustering key."""
    return (STORE_COLUMN, *(c for c in clustering_key(name) if c != STORE_COLUMN))


def _sorted_by(name: str) -> str:
    columns = ", ".join(quote_identifier(c) for c in sort_key(name))
    return f"ALTER TABLE {qualified(name)} SET SORTED BY ({columns})"


def _partitioned_tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The live tables of `lake` with partition keys (an earlier Quarry partitioned
    per-store tables by store)."""
    meta = "__ducklake_metadata_lake"
    rows = con.execute(
        f"SELECT DISTINCT t.table_name FROM {meta}.ducklake_partition_info p "
        f"JOIN {meta}.ducklake_partition_column c USING (partition_id, table_id) "
        f"JOIN {meta}.ducklake_table t USING (table_id) "
        "WHERE p.end_snapshot IS NULL AND t.end_snapshot IS NULL"
    ).fetchall()
    return {name for (name,) in rows}


def ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create every missing table of `lake`, and add columns its spec gained, in one
    transaction; nothing when all are there. The caller holds the lake's write lock."""
    statements = missing_ddl(con)
    if not statements:
        return
    new_rollups = [
        name
        for name, table_spec in TABLES.items()
        if table_spec.rollup_of is not None
        and any(s.startswith(f"CREATE TABLE {qualified(name)} ") for s in statements)
    ]
    cursor = con.cursor()
    try:
        with transaction(cursor):
            for statement in statements:
                cursor.execute(statement)
            if new_rollups:
                # A lake from before the rollups: they start as the sums of the facts it
                # holds, in the transaction that creates them. Imported here: the rollups'
                # builder reads this module's helpers.
                from warehouse.rollups.build import fill

                fill(cursor, new_rollups)
    finally:
        cursor.close()


def select_columns(name: str, alias: str | None = None) -> str:
    """The columns of table `name` in schema order, for an INSERT ... SELECT that must not
    depend on the order of the source's columns."""
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + quote_identifier(f.name) for f in spec(name).schema)
