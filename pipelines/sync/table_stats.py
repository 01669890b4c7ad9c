"""Facts about a table's newest rows, for asset metadata and asset checks: counted by
DuckLake itself, so inlined rows and delete files count as readers see them."""

from __future__ import annotations

from dataclasses import dataclass

from warehouse.lake import LAKE, Lake
from warehouse.tables import STORE_COLUMN, qualified, quote_literal, spec, store_predicate


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


def key_health(
    lake: Lake, table: str, store_id: str | None, *, since: int | None = None
) -> KeyHealth:
    """Duplicate and null keys of `table` for one store (or all of it).

    With `since`, a lake version whose rows were checked already (the store's published
    snapshot: a failing check keeps a run from publishing), only the keys inserted after it
    can collide, so duplicates are looked for among those keys alone: a semi-join on the key
    columns instead of a DISTINCT over the whole partition, which is what made a small
    change's checks grow with the table. Null keys are counted over the partition (rows
    inserted since may have been deleted again, so the insertions alone would overcount);
    DuckLake's per-file null counts skip the files that have none."""
    keys = ", ".join(spec(table).primary_key)
    nulls = " OR ".join(f"{c} IS NULL" for c in key_columns(table))
    where = _where(table, store_id)
    newest = lake.version() if since is not None else 0
    cursor = lake.cursor()
    try:
        if since is None or since > newest:
            rows, distinct, null_rows = cursor.execute(
                f"WITH t AS (SELECT * FROM {qualified(table)}{where}) "
                f"SELECT count(*), (SELECT count(*) FROM (SELECT DISTINCT {keys} FROM t)), "
                f"count(*) FILTER (WHERE {nulls}) FROM t"
            ).fetchone() or (0, 0, 0)
            return KeyHealth(rows=rows, duplicate_keys=rows - distinct, null_keys=null_rows)
        duplicates = 0
        if newest > since:
            inserted = (
                f"SELECT DISTINCT {keys} FROM {LAKE}.table_insertions("
                f"{quote_literal(table)}, {since + 1}, {newest}){where}"
            )
            duplicates = (
                cursor.execute(
                    f"SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n "
                    f"FROM (SELECT {keys} FROM {qualified(table)}{where}) "
                    f"JOIN ({inserted}) USING ({keys}) GROUP BY {keys})"
                ).fetchone()
                or (0,)
            )[0]
        rows, null_rows = cursor.execute(
            f"SELECT count(*), count(*) FILTER (WHERE {nulls}) FROM {qualified(table)}{where}"
        ).fetchone() or (0, 0)
    finally:
        cursor.close()
    return KeyHealth(rows=rows, duplicate_keys=int(duplicates), null_keys=null_rows)
