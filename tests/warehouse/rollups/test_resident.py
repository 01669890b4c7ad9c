"""Rollups held in the API reader's memory (warehouse.resident) answer exactly as the lake's
rows do: generated queries through the query service, a reader that keeps rollups beside
one that does not, after incremental syncs published one store at a time; a store's rows
are copied once per published version, freed with the last snapshot reading them, and a
reader over its row budget reads the lake."""

from __future__ import annotations

import threading
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
from warehouse.resident import Load, ResidentRollups

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


def test_a_copy_is_made_without_the_readers_lock_once_for_every_query_that_needs_it(
    lake: Lake,
    registry: Registry,
    quarry_env: Settings,
    shops: list[Shop],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first queries after a publish: one copies the store's rows while a query that
    needs no copy is answered meanwhile, and a second query needing the same rows waits
    for that copy instead of making its own; all answer as the lake does."""
    changed = shops[0].store_id
    others = [s for s in STORES if s != changed]
    with (
        closing(_reader(quarry_env, registry, 0)) as lake_reader,
        closing(_reader(quarry_env, registry, 1_000_000)) as memory,
    ):
        _answer(memory, BREAKDOWN)  # every store's rows held at its published version
        shops[0].sync_change(lake, count=6)
        publish(lake, registry, changed)
        expected = _answer(lake_reader, BREAKDOWN)

        copying, proceed, waiting = threading.Event(), threading.Event(), threading.Event()
        copies: list[str] = []
        original = ResidentRollups.copy

        class WatchedEvent(threading.Event):
            def wait(self, timeout: float | None = None) -> bool:
                waiting.set()
                return super().wait(timeout)

        def held_copy(cursor: Any, load: Load) -> Any:
            copies.append(load.table)
            load.done = WatchedEvent()  # a second query waits on this
            copying.set()
            assert proceed.wait(60), "the test never let the copy go on"
            return original(cursor, load)

        monkeypatch.setattr(ResidentRollups, "copy", staticmethod(held_copy))
        answers: dict[str, Any] = {}

        def ask(name: str, **options: Any) -> None:
            answers[name] = _answer(memory, BREAKDOWN, **options)

        first = threading.Thread(target=ask, args=("first",))
        first.start()
        assert copying.wait(60)
        # The other stores' rows are held: answered while the copy is under way.
        unchanged = threading.Thread(target=ask, args=("unchanged",), kwargs={"store_ids": others})
        unchanged.start()
        unchanged.join(60)
        assert not unchanged.is_alive(), "a query that needs no copy waited for one"
        second = threading.Thread(target=ask, args=("second",))
        second.start()
        assert waiting.wait(60), "the second query did not wait for the first one's copy"
        proceed.set()
        for thread in (first, second):
            thread.join(60)
            assert not thread.is_alive()

        assert answers["first"] == answers["second"] == expected
        assert answers["unchanged"] == _answer(lake_reader, BREAKDOWN, store_ids=others)
        assert len(copies) == 1  # one table, one store, copied once
        held = memory.resident_versions()
        assert all(len(versions) <= 2 for versions in held.values())
