"""Facts about a table's newest rows, for asset metadata and asset checks: counted by
DuckLake itself, so inlined rows and delete files count as readers see them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from warehouse.lake import Lake
from warehouse.schemas import SOURCE_DATASETS
from warehouse.tables import STORE_COLUMN, inserted_after, qualified, spec, store_predicate


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
    snapshot: a failing check keeps a run from publishing), only rows inserted after it are
    checked: their key columns for nulls, and their keys against every row's for
    duplicates. That reads the new rows' files and the partition's key columns, instead of
    a DISTINCT over the whole partition, which made a small change's check grow with the
    table."""
    keys = ", ".join(spec(table).primary_key)
    nulls = " OR ".join(f"{c} IS NULL" for c in key_columns(table))
    where = _where(table, store_id)
    cursor = lake.cursor()
    try:
        if since is None:
            rows, distinct, null_rows = cursor.execute(
                f"WITH t AS (SELECT * FROM {qualified(table)}{where}) "
                f"SELECT count(*), (SELECT count(*) FROM (SELECT DISTINCT {keys} FROM t)), "
                f"count(*) FILTER (WHERE {nulls}) FROM t"
            ).fetchone() or (0, 0, 0)
            return KeyHealth(rows=rows, duplicate_keys=rows - distinct, null_keys=null_rows)
        new = f"{where} {'AND' if where else 'WHERE'} {inserted_after(since)}"
        rows, null_rows, duplicates = cursor.execute(
            f"WITH fresh AS (SELECT * FROM {qualified(table)}{new}) "
            f"SELECT (SELECT count(*) FROM {qualified(table)}{where}), "
            f"(SELECT count(*) FROM fresh WHERE {nulls}), "
            f"(SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n "
            f"FROM (SELECT {keys} FROM {qualified(table)}{where}) "
            f"JOIN (SELECT DISTINCT {keys} FROM fresh) USING ({keys}) GROUP BY {keys}))"
        ).fetchone() or (0, 0, 0)
    finally:
        cursor.close()
    return KeyHealth(rows=rows, duplicate_keys=int(duplicates), null_keys=null_rows)


# Parent table -> the platform dataset its rows come from.
PLATFORM_DATASETS = {tables[0]: dataset for dataset, tables in SOURCE_DATASETS.items()}


@dataclass(frozen=True)
class CheckOutcome:
    """One asset check of one table: `blocking` failures keep the store's snapshot from
    being published; `figures` are its metadata, unlabelled."""

    table: str
    name: str
    passed: bool
    blocking: bool
    figures: dict[str, int | str] = field(default_factory=dict)


def table_checks(
    lake: Lake,
    table: str,
    store_id: str | None,
    platform_count: Callable[[str], int],
    *,
    since: int | None = None,
) -> list[CheckOutcome]:
    """valid_keys of `table` for one store (or all when None; with `since`, among the rows
    inserted after it: key_health), and matches_platform for a parent table, its row count
    against `platform_count(dataset)`. What the per-store asset checks and a fleet batch
    both report."""
    health = key_health(lake, table, store_id, since=since)
    outcomes = [
        CheckOutcome(
            table,
            "valid_keys",
            health.duplicate_keys == 0 and health.null_keys == 0,
            True,
            {
                "rows": health.rows,
                "duplicate_keys": health.duplicate_keys,
                "rows_with_null_keys": health.null_keys,
            },
        )
    ]
    if table in PLATFORM_DATASETS:
        platform = platform_count(PLATFORM_DATASETS[table])
        outcomes.append(
            CheckOutcome(
                table,
                "matches_platform",
                platform == health.rows,  # counted by key_health a moment ago
                False,
                {"warehouse_rows": health.rows, "platform_records": platform},
            )
        )
    return outcomes
