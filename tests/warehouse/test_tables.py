"""Table creation and table-wide helpers."""

from __future__ import annotations

import pytest

from quarry.settings import Settings
from tests.concurrency import errors_in_threads
from warehouse.schemas import TABLES
from warehouse.tables import (
    clustering_key,
    current_versions,
    ensure_tables,
    open_table,
    store_predicate,
    table_path,
)


def test_racing_creators_make_each_table_once(quarry_env: Settings) -> None:
    assert errors_in_threads(lambda: ensure_tables(quarry_env), 4) == []
    assert current_versions(quarry_env, TABLES) == dict.fromkeys(TABLES, 0)
    ensure_tables(quarry_env)
    assert current_versions(quarry_env, TABLES) == dict.fromkeys(TABLES, 0)


def test_tables_have_their_schema_and_partitioning(quarry_env: Settings) -> None:
    ensure_tables(quarry_env)
    for name, spec in TABLES.items():
        table = open_table(quarry_env, name)
        metadata = table.metadata()
        assert metadata.partition_columns == (["store_id"] if spec.partitioned else [])
        assert [f.name for f in table.schema().fields] == spec.schema.names
        assert table_path(quarry_env, name).is_dir()


def test_store_ids_are_checked_before_they_reach_sql(quarry_env: Settings) -> None:
    assert store_predicate("st_a1", "t") == "t.store_id = 'st_a1'"
    for bad in ("st_a' OR '1'='1", "ST_A", "", "st-a"):
        with pytest.raises(ValueError):
            store_predicate(bad)
    with pytest.raises(KeyError, match="not a warehouse table"):
        table_path(quarry_env, "ordres")


def test_clustering_keys_put_parents_by_creation_and_children_by_parent() -> None:
    assert clustering_key("orders") == ("created_at", "id")
    assert clustering_key("customers") == ("created_at", "id")
    assert clustering_key("order_lines") == ("order_id", "id")
    assert clustering_key("sales") == ("order_id", "id")
    assert clustering_key("product_variants") == ("product_id", "id")
    assert clustering_key("exchange_rates") == ("date", "base", "currency")
