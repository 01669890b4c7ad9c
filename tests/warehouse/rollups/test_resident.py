"""Rollups held in the API reader's memory (warehouse.resident) answer exactly as the lake's
rows do: generated queries through the query service, a reader that keeps rollups beside
one that does not, after incremental syncs published one store at a time; a store's rows
are copied once per published version, freed with the last snapshot reading them, and a
reader over its row budget reads the lake."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from typing import Any

import pytest

from quarry.errors import QuarryError
from quarry.settings import Settings
from registry.db import Registry
from tests.warehouse.conftest import add_stores, publish
from tests.warehouse.rollups.shops import (
    ACCOUNT_CURRENCY,
    ACCOUNT_ZONE,
    NOW,
    STORES,
    Shop,
    load_rates,
)
from tests.warehouse.rollups.test_rollups_differential import queries
from warehouse.lake import Lake
from warehouse.query import Limits
from warehouse.query.diagnostics import InvalidQuery
from warehouse.query.service import QueryContext, answer
from warehouse.reader import WarehouseReader

CONTEXT = QueryContext(STORES, ACCOUNT_CURRENCY, ACCOUNT_ZONE, now=NOW)
BREAKDOWN = "FROM sales SHOW total_sales, orders GROUP BY store SINCE 2024-09-01 UNTIL 2025-04-30"


@pytest.fixture
def registry(quarry_env: Settings) -> Iterator[Registry]:
    reg = Registry(quarry_env)
    add_stores(reg, STORES)
    yield reg
    reg.dispose()


@pytest.fixture
def shops(lake: Lake, registry: Registry) -> list[Shop]:
    load_rates(lake)
    out = [Shop(store_id, seed=k, count=60) for k, store_id in enumerate(STORES)]
    for shop in out:
        shop.sync_full(lake)
        publish(lake, registry, shop.store_id)
    return out


def _reader(settings: Settings, registry: Registry, rows: int, **options: Any) -> WarehouseReader:
    return WarehouseReader(settings, registry, resident_rollup_rows=rows, **options)


def _answer(reader: WarehouseReader, text: str, **options: Any) -> Any:
    context = QueryContext(
        STORES,
        ACCOUNT_CURRENCY,
        ACCOUNT_ZONE,
        time_zone=options.get("time_zone"),
        store_ids=tuple(options["store_ids"]) if options.get("store_ids") else None,
        now=NOW,
    )
    try:
        result = answer(reader, text, context, Limits())
    except (InvalidQuery, QuarryError) as exc:
        return ("error", type(exc).__name__, str(exc)), "facts"
    return result.public(), result.source_table or "facts"


def _compare(lake_reader: WarehouseReader, memory: WarehouseReader, seed: int) -> int:
    """Generated queries both ways; how many a rollup answered."""
    rolled = 0
    for text, options in queries(seed, 40):
        expected, source = _answer(lake_reader, text, **options)
        held, held_source = _answer(memory, text, **options)
        assert held == expected, f"{text} {options} answered from {source}"
        assert held_source == source
        rolled += source != "facts"
    return rolled


def test_rollups_held_in_memory_answer_as_the_lake_does_through_published_syncs(
    lake: Lake, registry: Registry, quarry_env: Settings, shops: list[Shop]
) -> None:
    with (
        closing(_reader(quarry_env, registry, 0)) as lake_reader,
        closing(_reader(quarry_env, registry, 1_000_000)) as memory,
    ):
        assert _compare(lake_reader, memory, seed=11) >= 10
        assert memory.resident_rows > 0
        for k, shop in enumerate(shops):
            shop.sync_change(lake, count=4 + k)
            publish(lake, registry, shop.store_id)
            assert _compare(lake_reader, memory, seed=12 + k) >= 10
        assert lake_reader.resident_rows == 0


def test_a_store_is_copied_once_per_published_version_and_freed_with_its_snapshots(
    lake: Lake, registry: Registry, quarry_env: Settings, shops: list[Shop]
) -> None:
    with closing(_reader(quarry_env, registry, 1_000_000)) as memory:
        _answer(memory, BREAKDOWN)
        first = memory.resident_versions()
        tables = {t for t, _ in first}
        assert len(tables) == 1 and {s for _, s in first} == set(STORES)
        (table,) = tables

        # One store publishes a change: its rows are copied at its new version, beside the
        # old one that the first snapshot still reads; the other stores' copies serve both.
        changed = shops[0].store_id
        shops[0].sync_change(lake, count=6)
        version = publish(lake, registry, changed)
        _answer(memory, BREAKDOWN)
        second = memory.resident_versions()
        assert second[(table, changed)] == [*first[(table, changed)], version]
        assert {k: v for k, v in second.items() if k[1] != changed} == {
            k: v for k, v in first.items() if k[1] != changed
        }

    # One cached snapshot: a query of one store evicts the snapshot of all, and with it
    # the copies only that one read.
    with closing(_reader(quarry_env, registry, 1_000_000, max_cached_snapshots=1)) as memory:
        _answer(memory, BREAKDOWN)
        everything = memory.resident_rows
        _answer(memory, BREAKDOWN, store_ids=[changed])
        # (One store in its own zone may be answered from another set: day rows.)
        held = memory.resident_versions()
        assert {store for _, store in held} == {changed}
        assert set(map(tuple, held.values())) == {(version,)}
        assert 0 < memory.resident_rows < everything


def test_a_reader_over_its_row_budget_reads_the_rollups_from_the_lake(
    lake: Lake, registry: Registry, quarry_env: Settings, shops: list[Shop]
) -> None:
    with (
        closing(_reader(quarry_env, registry, 0)) as lake_reader,
        closing(_reader(quarry_env, registry, 5)) as small,
    ):
        expected, source = _answer(lake_reader, BREAKDOWN)
        assert source != "facts"
        assert _answer(small, BREAKDOWN) == (expected, source)
        assert small.resident_rows == 0
