"""A sync that reads between two of an advance's published files (or after an advance killed
while publishing): a full sync then, and an incremental one once the rest is published,
leave the warehouse equal to the platform. Published deletions first, a full sync would
keep the deleted rows of the parents not yet published for good."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from cli.demo_account import advance_demo, seed_demo
from pipelines.runner import sync_stores
from platforms.demo.seed import demo_stores
from platforms.demo.storage import STORE_TABLES, load_table
from quarry.files import TEMPORARY_MARK, FileStore
from quarry.settings import Settings
from registry.db import Registry
from tests.pipelines.helpers import sort_rows, warehouse_rows

pytestmark = pytest.mark.slow

CHILD_TABLES = 4  # order_lines, refunds, refund_lines, product_variants


@pytest.mark.parametrize(
    "moved", [CHILD_TABLES, len(STORE_TABLES)], ids=["children", "all-but-deletions"]
)
def test_a_full_sync_between_two_published_files_misses_nothing(
    quarry_env: Settings, dagster_home: Path, monkeypatch: pytest.MonkeyPatch, moved: int
) -> None:
    registry = Registry(quarry_env)
    account_id = seed_demo(
        quarry_env, registry, orders=400, stores=1, seed=21, anchor=date(2025, 2, 1)
    )
    [store_id] = [s.id for s in demo_stores(quarry_env, account_id)]

    # The advance's publish stops after `moved` files; the rest waits in `held`.
    held: list[tuple[FileStore, str, str]] = []
    done: list[str] = []
    real = FileStore.move

    def publishing(self: FileStore, source: str, target: str) -> None:
        if TEMPORARY_MARK not in source or len(done) < moved:
            done.append(target)
            real(self, source, target)
        else:
            held.append((self, source, target))

    monkeypatch.setattr(FileStore, "move", publishing)
    advance_demo(quarry_env, registry, account_id, days=3)
    monkeypatch.setattr(FileStore, "move", real)
    assert held, "the advance published everything"

    full = sync_stores(quarry_env, registry, full=True)
    assert all(o.success for o in full), [(o.failed_step, o.error) for o in full]
    for files, source, target in held:
        files.move(source, target)
    later = sync_stores(quarry_env, registry)
    assert all(o.success for o in later), [(o.failed_step, o.error) for o in later]

    for table in STORE_TABLES:
        truth = sort_rows(table, load_table(quarry_env, account_id, store_id, table))
        assert warehouse_rows(quarry_env, table, store_id).equals(truth), table
    registry.dispose()
