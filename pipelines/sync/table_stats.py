"""Facts about a table's newest rows, for asset metadata and asset checks: counted by
DuckLake itself, so inlined rows and delete files count as readers see them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from warehouse.lake import Lake
from warehouse.schemas import SOURCE_DATASETS
from warehouse.tables import STORE_COLUMN, inserted_after, qualified, spec, store_predicate


def _where(table: str, store_id: str | None) -> str:
    if store_id is None or not spec(table).per_store:
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
    if table_spec.per_store:
        columns.append(STORE_COLUMN)
    if table_spec.parent_key:
        columns.append(table_spec.parent_key)
    return tuple(dict.fromkeys(columns))


def key_health(
    lake: Lake, table: str, store_id: str | None, *, since: int | None = None
) -> KeyHealth:
    """Duplicate and null keys of `table` for one store (stores_key_health), or all of it."""
    if store_id is not None and spec(table).per_store:
        return stores_key_health(lake, table, {store_id: since})[store_id]
    keys = ", ".join(spec(table).primary_key)
    nulls = " OR ".join(f"{c} IS NULL" for c in key_columns(table))
    cursor = lake.cursor()
    try:
        rows, distinct, null_rows = cursor.execute(
            f"WITH t AS (SELECT * FROM {qualified(table)}) "
            f"SELECT count(*), (SELECT count(*) FROM (SELECT DISTINCT {keys} FROM t)), "
            f"count(*) FILTER (WHERE {nulls}) FROM t"
        ).fetchone() or (0, 0, 0)
    finally:
        cursor.close()
    return KeyHealth(rows=rows, duplicate_keys=rows - distinct, null_keys=null_rows)


def stores_key_health(
    lake: Lake, table: str, stores: Mapping[str, int | None]
) -> dict[str, KeyHealth]:
    """Duplicate and null keys of `table` for each store of `stores` (store -> version), in
    one query for them all (a fleet batch checks its stores together).

    With a version (the store's published snapshot, whose rows were checked already: a
    failing check keeps a run from publishing), only the store's rows inserted after it are
    checked: their key columns for nulls, and their keys against every row's for
    duplicates. That reads the new rows' files and the partition's key columns, instead of
    a DISTINCT over the whole partition, which made a small change's check grow with the
    table. Without one (a first or full sync) every row of the store is checked."""
    if not stores:
        return {}
    keys = ", ".join((STORE_COLUMN, *spec(table).primary_key))
    nulls = " OR ".join(f"{c} IS NULL" for c in key_columns(table))
    versions = pa.table(
        {
            STORE_COLUMN: pa.array(list(stores), pa.string()),
            "since": pa.array(list(stores.values()), pa.int64()),
        }
    )
    known = [v for v in stores.values() if v is not None]
    if not known:
        return _whole_stores_key_health(lake, table, list(stores))
    # Pushed down to skip the files older than every store's version.
    newer = f" AND {inserted_after(min(known))}" if len(known) == len(stores) else ""
    where = store_predicate(list(stores))
    cursor = lake.cursor()
    cursor.register(_VERSIONS, versions)
    try:
        found = cursor.execute(
            f"WITH part AS (SELECT {keys} FROM {qualified(table)} WHERE {where}), "
            f"fresh AS (SELECT t.* FROM (SELECT *, snapshot_id AS quarry_snapshot "
            f"FROM {qualified(table)} WHERE {where}{newer}) t "
            f"JOIN {_VERSIONS} v USING ({STORE_COLUMN}) "
            "WHERE v.since IS NULL OR t.quarry_snapshot > v.since), "
            f"counted AS (SELECT {STORE_COLUMN}, count(*) AS n FROM part GROUP BY ALL), "
            f"nulls AS (SELECT {STORE_COLUMN}, count(*) AS n FROM fresh WHERE {nulls} "
            "GROUP BY ALL), "
            f"doubled AS (SELECT {STORE_COLUMN}, sum(n - 1) AS n FROM (SELECT {keys}, "
            f"count(*) AS n FROM part JOIN (SELECT DISTINCT {keys} FROM fresh) USING ({keys}) "
            f"GROUP BY ALL) GROUP BY ALL) "
            f"SELECT {STORE_COLUMN}, coalesce(counted.n, 0), coalesce(doubled.n, 0), "
            f"coalesce(nulls.n, 0) FROM {_VERSIONS} "
            f"LEFT JOIN counted USING ({STORE_COLUMN}) LEFT JOIN doubled USING ({STORE_COLUMN}) "
            f"LEFT JOIN nulls USING ({STORE_COLUMN})"
        ).fetchall()
    finally:
        cursor.unregister(_VERSIONS)
        cursor.close()
    return {
        str(store): KeyHealth(rows=int(rows), duplicate_keys=int(doubled), null_keys=int(null))
        for store, rows, doubled, null in found
    }


_VERSIONS = "quarry_store_versions"


def _whole_stores_key_health(lake: Lake, table: str, stores: list[str]) -> dict[str, KeyHealth]:
    """Every row of each store checked: a DISTINCT over the partitions, cheaper than the
    join stores_key_health makes for new rows when all rows are new."""
    keys = ", ".join((STORE_COLUMN, *spec(table).primary_key))
    nulls = " OR ".join(f"{c} IS NULL" for c in key_columns(table))
    where = store_predicate(stores)
    cursor = lake.cursor()
    try:
        found = cursor.execute(
            f"WITH t AS (SELECT * FROM {qualified(table)} WHERE {where}), "
            f"counted AS (SELECT {STORE_COLUMN}, count(*) AS n, "
            f"count(*) FILTER (WHERE {nulls}) AS nulls FROM t GROUP BY ALL), "
            f"distinct_keys AS (SELECT {STORE_COLUMN}, count(*) AS n "
            f"FROM (SELECT DISTINCT {keys} FROM t) GROUP BY ALL) "
            f"SELECT {STORE_COLUMN}, counted.n, counted.n - distinct_keys.n, counted.nulls "
            f"FROM counted JOIN distinct_keys USING ({STORE_COLUMN})"
        ).fetchall()
    finally:
        cursor.close()
    health = {
        str(store): KeyHealth(rows=int(rows), duplicate_keys=int(doubled), null_keys=int(null))
        for store, rows, doubled, null in found
    }
    return {store: health.get(store, KeyHealth(0, 0, 0)) for store in stores}


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
    against `platform_count(dataset)`. What the per-store asset checks report."""
    return _outcomes(table, key_health(lake, table, store_id, since=since), platform_count)


def stores_table_checks(
    lake: Lake,
    table: str,
    stores: Mapping[str, int | None],
    platform_counts: Mapping[str, Callable[[str], int]],
) -> dict[str, list[CheckOutcome]]:
    """table_checks of many stores (store -> the version its new rows follow, or None) in
    one query: what a fleet batch reports for each of its stores."""
    health = stores_key_health(lake, table, stores)
    return {s: _outcomes(table, health[s], platform_counts[s]) for s in stores}


def _outcomes(
    table: str, health: KeyHealth, platform_count: Callable[[str], int]
) -> list[CheckOutcome]:
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
