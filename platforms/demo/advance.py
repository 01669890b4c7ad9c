"""`quarry demo advance`: move a demo account's clock on by whole days.

Each store gets new orders (with lines, refunds and new customers), changes to old orders,
customers, products and drafts, and a few deletions, all at times in (old clock, new clock].
The result depends only on the seed and the sequence of advances. Files of every store are
staged first and then published in the order a concurrent sync tolerates
(platforms.demo.storage); the state, written last, records the new clock.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from platforms.demo.state import DemoState
from platforms.demo.storage import (
    DELETIONS,
    STORE_TABLES,
    Staged,
    discard,
    load_state,
    publish,
    read_store_table,
    save_state,
    stage_tables,
    store_dir,
)
from platforms.demo.store_advance import Counts, advance_store
from platforms.demo.timeline import DAY, to_datetime
from quarry.errors import InvalidRequest
from quarry.files import demo_files
from quarry.settings import Settings
from warehouse.schemas import SOURCE_DATASETS

MAX_DAYS = 3650


@dataclass(frozen=True)
class AdvanceSummary:
    account_id: str
    days: int
    clock_before: datetime
    clock_after: datetime
    # Per SOURCE_DATASETS name, summed over the stores.
    counts: dict[str, Counts] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "account_id": self.account_id,
            "days": self.days,
            "clock_before": self.clock_before.isoformat(),
            "clock_after": self.clock_after.isoformat(),
            "changes": {
                name: {"added": c.added, "updated": c.updated, "deleted": c.deleted}
                for name, c in self.counts.items()
            },
        }


def advance_stores(
    settings: Settings, account_id: str, store_ids: Collection[str], days: int = 1
) -> AdvanceSummary:
    """Advance the demo account's clock by `days` days; of its stores, those in `store_ids`
    get changes (the others were removed from Quarry). NotFound for an account without demo
    data; InvalidRequest for a day count out of range."""
    if not 1 <= days <= MAX_DAYS:
        raise InvalidRequest(
            f"days: must be between 1 and {MAX_DAYS}",
            errors=[{"field": "days", "message": f"between 1 and {MAX_DAYS}"}],
        )
    state = load_state(settings, account_id)
    old = state.clock
    new = old + days * DAY
    totals = {name: Counts(0, 0, 0) for name in SOURCE_DATASETS}
    # What a killed advance staged goes now: advances of one account never run at once
    # (each rewrites the state it read).
    demo_files(settings).remove_temporaries(account_id)
    staged: list[Staged] = []
    try:
        for store in state.stores:
            directory = store_dir(settings, account_id, store.id)
            if store.id not in store_ids or not directory.exists():
                continue
            tables = {
                name: read_store_table(directory, name) for name in (*STORE_TABLES, DELETIONS)
            }
            result = advance_store(
                state.seed, state.advances + 1, state.anchor, store, tables, old, new
            )
            staged += stage_tables(directory, result.tables)
            for name, c in result.counts.items():
                t = totals[name]
                totals[name] = Counts(
                    t.added + c.added, t.updated + c.updated, t.deleted + c.deleted
                )
    except BaseException:
        discard(staged)
        raise
    publish(staged)
    save_state(settings, _moved(state, new))
    return AdvanceSummary(account_id, days, to_datetime(old), to_datetime(new), totals)


def _moved(state: DemoState, clock: int) -> DemoState:
    state.clock = clock
    state.advances += 1
    return state
