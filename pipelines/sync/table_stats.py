"""Facts about a table's newest rows, for asset metadata and asset checks: counted by
DuckLake itself, so inlined rows and delete files count as readers see them."""

from __future__ import annotations

from dataclasses import dataclass

from warehouse.lake import Lake
from warehouse.tables import STORE_COLUMN, qualified, spec, store_predicate


def _where(table: str, store_id: str | None) -> str:
    if store_id is None or not spec(table).partitioned:
        return ""
    return f" WHERE {store_predicate(store_id)}"


def store_row_count(lake: Lake, table: str, store_id: str | None) -> int:
    """Rows of `table` for the store (the whole table when `store_id` is None)."""
    cursor = lake.cursor()
    try:
        row = cursor.execute(f"SELECT count(*) FROM {qualified(table)}{_where(table, store_id)}")
        return int((row.fetchone() or (0,))[0])
    finally:
        cursor.close()


@dataclass(frozen=True)
class KeyHealth:
    """Rows, rows sharing a primary key with another, and rows with a null key column."""

    rows: int
    duplicate_keys: int
    null_keys: int


def key_columns(table: str) -> tuple[str, ...]:
    """The columns that must never be null: primary key, store id, parent key."""
    table_spec = spec(table)
    columns = list(table_spec.primary_key)
    if table_spec.partitioned:
        columns.append(STORE_COLUMN)
    if table_spec.parent_key:
        columns.append(table_spec.parent_key)
    return tuple(dict.fromkeys(columns))


def key_health(lake: Lake, table: str, store_id: str | None) -> KeyHealth:
    """Duplicate and null keys of `table` for one store (or all of it)."""
    keys = ", ".join(spec(table).primary_key)
    nulls = " OR ".join(f"{c} IS NULL" for c in key_columns(table))
    cursor = lake.cursor()
    try:
        rows, distinct, null_rows = cursor.execute(
            f"WITH t AS (SELECT * FROM {qualified(table)}{_where(table, store_id)}) "
            f"SELECT count(*), (SELECT count(*) FROM (SELECT DISTINCT {keys} FROM t)), "
            f"count(*) FILTER (WHERE {nulls}) FROM t"
        ).fetchone() or (0, 0, 0)
    finally:
        cursor.close()
    return KeyHealth(rows=rows, duplicate_keys=rows - distinct, null_keys=null_rows)
