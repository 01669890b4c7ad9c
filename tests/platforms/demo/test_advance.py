"""Advancing the demo clock: adds, updates and deletes at times in (old, new], exactly what a
sync from the cursor taken before the advance then receives, deterministically."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from cli.demo_account import advance_demo, seed_demo
from platforms.demo.connector import DemoConnector
from platforms.demo.seed import demo_stores
from platforms.demo.storage import (
    STORE_TABLES,
    delete_store_files,
    load_deletions,
    load_state,
    load_table,
    store_dir,
)
from quarry.errors import InvalidRequest, NotFound
from quarry.settings import Settings
from registry.accounts import create_account
from registry.db import Registry
from tests.platforms.demo.checks import check_all
from tests.platforms.demo.conftest import settings_in
from warehouse.schemas import SOURCE_DATASETS, TABLES

ANCHOR = date(2025, 11, 20)


def _seed(settings: Settings, orders: int = 4_000) -> tuple[Registry, str]:
    registry = Registry(settings)
    return registry, seed_demo(settings, registry, orders=orders, stores=3, seed=5, anchor=ANCHOR)


def _tables(settings: Settings, account_id: str, store_id: str) -> dict[str, pa.Table]:
    return {name: load_table(settings, account_id, store_id, name) for name in STORE_TABLES}


def _frame(table: pa.Table) -> pd.DataFrame:
    return table.to_pandas().set_index("id").sort_index()


def _last_cursor(connector: DemoConnector, dataset: str) -> str | None:
    return list(connector.changes(dataset, None))[-1].cursor


def test_a_sync_from_the_old_cursor_gets_exactly_the_changes(quarry_env: Settings) -> None:
    registry, account_id = _seed(quarry_env)
    stores = demo_stores(quarry_env, account_id)
    old = pd.Timestamp(ANCHOR, tz="UTC")
    new = old + pd.Timedelta(days=2)
    connectors = {s.id: DemoConnector(quarry_env, account_id, s.id, page_size=40) for s in stores}
    cursors = {
        (s.id, d): _last_cursor(connectors[s.id], d) for s in stores for d in SOURCE_DATASETS
    }
    before = {s.id: _tables(quarry_env, account_id, s.id) for s in stores}

    summary = advance_demo(quarry_env, registry, account_id, days=2)

    assert summary.clock_after - summary.clock_before == pd.Timedelta(days=2)
    for dataset in ("orders", "customers", "products", "draft_orders"):
        assert summary.counts[dataset].deleted >= len(stores), dataset
        assert summary.counts[dataset].updated > 0, dataset
    assert summary.counts["orders"].added > 0 and summary.counts["customers"].added > 0
    assert load_state(quarry_env, account_id).clock == int(new.timestamp())

    totals = {d: [0, 0, 0] for d in SOURCE_DATASETS}
    for store in stores:
        after = _tables(quarry_env, account_id, store.id)
        check_all(after, store.id, store.currency == "JPY", new)
        deletions = load_deletions(quarry_env, account_id, store.id).to_pandas()
        assert ((deletions["deleted_at"] > old) & (deletions["deleted_at"] <= new)).all()
        for dataset, names in SOURCE_DATASETS.items():
            parent, children = names[0], names[1:]
            was, now = _frame(before[store.id][parent]), _frame(after[parent])
            added = now.index.difference(was.index)
            deleted = was.index.difference(now.index)
            kept = now.index.intersection(was.index)
            a, b = now.loc[kept], was.loc[kept]
            changed = kept[(~((a == b) | (a.isna() & b.isna()))).any(axis=1).to_numpy()]
            # Exactly the rows touched now carry an updated_at after the old clock...
            moved = now.index[now["updated_at"] > old]
            assert set(moved) == set(added) | set(changed), (store.id, dataset)
            assert (now.loc[moved, "updated_at"] <= new).all()
            assert (now.loc[added, "created_at"] > old).all()
            assert set(deletions.loc[deletions["dataset"] == dataset, "id"]) == set(deleted)

            # ... and a sync from the cursor taken before the advance receives exactly them.
            pages = list(connectors[store.id].changes(dataset, cursors[(store.id, dataset)]))
            got = pa.concat_tables([p.tables[parent] for p in pages])["id"].to_pylist()
            assert sorted(got) == sorted(moved), (store.id, dataset)
            assert sorted(i for p in pages for i in p.deleted_ids) == sorted(deleted)
            for child in children:
                got_children = pa.concat_tables([p.tables[child] for p in pages]).sort_by("id")
                truth = after[child].filter(
                    pc.is_in(after[child][TABLES[child].parent_key], pa.array(got, pa.string()))
                )
                assert got_children.equals(truth.sort_by("id")), child
                # Children of parents the sync does not see again are unchanged.
                key = TABLES[child].parent_key
                unseen = pa.array(list(set(kept) - set(moved)), pa.string())
                old_rows = before[store.id][child].filter(
                    pc.is_in(before[store.id][child][key], unseen)
                )
                new_rows = after[child].filter(pc.is_in(after[child][key], unseen))
                assert old_rows.sort_by("id").equals(new_rows.sort_by("id")), child
            counts = totals[dataset]
            counts[0] += len(added)
            counts[1] += len(changed)
            counts[2] += len(deleted)
    for dataset, (added, updated, deleted) in totals.items():
        assert (
            summary.counts[dataset].added,
            summary.counts[dataset].updated,
            summary.counts[dataset].deleted,
        ) == (added, updated, deleted), dataset


def test_consecutive_advances_move_strictly_forward(quarry_env: Settings) -> None:
    registry, account_id = _seed(quarry_env, orders=2_000)
    store = demo_stores(quarry_env, account_id)[2]
    connector = DemoConnector(quarry_env, account_id, store.id)
    cursor = _last_cursor(connector, "orders")
    clock = pd.Timestamp(ANCHOR, tz="UTC")
    for days in (1, 3, 1):
        advance_demo(quarry_env, registry, account_id, days=days)
        pages = list(connector.changes("orders", cursor))
        orders = pa.concat_tables([p.tables["orders"] for p in pages]).to_pandas()
        assert (orders["updated_at"] > clock).all()
        clock += pd.Timedelta(days=days)
        assert (orders["updated_at"] <= clock).all()
        cursor = pages[-1].cursor
        check_all(_tables(quarry_env, account_id, store.id), store.id, True, clock)
    assert next(iter(connector.changes("orders", cursor))).tables["orders"].num_rows == 0


def _normalised(settings: Settings, account_id: str) -> list[pa.Table]:
    """Every table of every store with the store's id (drawn by the registry) blanked."""
    out = []
    for store in demo_stores(settings, account_id):
        for name in (*STORE_TABLES, "deletions"):
            table = (
                load_deletions(settings, account_id, store.id)
                if name == "deletions"
                else load_table(settings, account_id, store.id, name)
            )
            columns = [
                pc.replace_substring(c, store.id, "ST") if pa.types.is_string(c.type) else c
                for c in table.columns
            ]
            out.append(pa.table(columns, schema=table.schema))
    return out


def test_same_seed_and_advances_give_the_same_data(quarry_env: Settings, tmp_path: Path) -> None:
    other = settings_in(tmp_path / "other-home")
    runs = []
    for settings in (quarry_env, other):
        registry, account_id = _seed(settings, orders=1_500)
        advance_demo(settings, registry, account_id, days=1)
        advance_demo(settings, registry, account_id, days=2)
        runs.append(_normalised(settings, account_id))
    assert all(a.equals(b) for a, b in zip(*runs, strict=True))


def test_a_removed_store_is_forgotten(quarry_env: Settings) -> None:
    registry, account_id = _seed(quarry_env, orders=1_500)
    gone, *kept = demo_stores(quarry_env, account_id)
    delete_store_files(quarry_env, gone.id)
    delete_store_files(quarry_env, gone.id)
    assert [s.id for s in demo_stores(quarry_env, account_id)] == [s.id for s in kept]
    with pytest.raises(NotFound):
        load_table(quarry_env, account_id, gone.id, "orders")
    summary = advance_demo(quarry_env, registry, account_id, days=1)
    assert summary.counts["orders"].deleted == len(kept)
    assert not store_dir(quarry_env, account_id, gone.id).exists()


def test_unknown_accounts_and_bad_days_are_refused(quarry_env: Settings) -> None:
    registry = Registry(quarry_env)
    with pytest.raises(NotFound):
        advance_demo(quarry_env, registry, "acc_unknown", days=1)
    with registry.session() as session:
        plain = create_account(session, name="Plain", currency="EUR", timezone="Europe/Berlin").id
    with pytest.raises(NotFound):
        advance_demo(quarry_env, registry, plain, days=1)
    with pytest.raises(InvalidRequest):
        advance_demo(quarry_env, registry, plain, days=0)
