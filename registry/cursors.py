"""Sync cursors: where each store's sync of each dataset resumes.

A connector's cursor is an opaque string saved after every committed page, so an interrupted
sync resumes where it stopped; None means "from the beginning" (a full sync). The sales
model keeps its own row here too (dataset `sales`): the orders whose sale events still have
to be rebuilt, so a run that fails between writing orders and writing sales loses nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from registry.models import SyncCursor

SALES_DATASET = "sales"


def get_cursor(session: Session, store_id: str, dataset: str) -> str | None:
    """The saved cursor of `dataset` in `store_id`, or None when it never synced."""
    row = session.get(SyncCursor, (store_id, dataset))
    return row.cursor if row else None


def set_cursor(session: Session, store_id: str, dataset: str, cursor: str | None) -> None:
    """Save the cursor to resume `dataset` of `store_id` from (None forgets it)."""
    row = _locked(session, store_id, dataset)
    if row is None:
        session.add(SyncCursor(store_id=store_id, dataset=dataset, cursor=cursor))
    else:
        row.cursor = cursor
    session.flush()


def list_cursors(session: Session, store_id: str) -> dict[str, str | None]:
    """Every saved cursor of a store, by dataset."""
    rows = session.scalars(select(SyncCursor).where(SyncCursor.store_id == store_id))
    return {row.dataset: row.cursor for row in rows}


@dataclass
class PendingSales:
    """Orders whose sale events are out of date (every order of the store when `full`).

    `marks` maps each order id to the sequence number of its latest mark and `seq` is the
    newest number, so a build clears exactly what it read: an order marked again while the
    build ran stays pending for the next one."""

    full: bool = False
    marks: dict[str, int] = field(default_factory=dict)
    seq: int = 0

    @property
    def order_ids(self) -> set[str]:
        return set(self.marks)

    def __bool__(self) -> bool:
        return self.full or bool(self.marks)


def pending_sales(session: Session, store_id: str) -> PendingSales:
    """What the sales model has still to rebuild for `store_id`."""
    return _decode(get_cursor(session, store_id, SALES_DATASET))


def mark_sales_pending(
    session: Session, store_id: str, order_ids: Iterable[str] = (), *, full: bool = False
) -> None:
    """Add orders (or the whole store) to what the sales model must rebuild. Called in the
    same transaction as the orders cursor, so a committed page is never forgotten."""
    row = _locked(session, store_id, SALES_DATASET)
    pending = _decode(row.cursor if row else None)
    pending.seq += 1
    if full:
        # A full rebuild covers every order: listing them would only grow the row.
        pending.full = True
        pending.marks.clear()
    elif not pending.full:
        pending.marks.update(dict.fromkeys(order_ids, pending.seq))
    set_cursor(session, store_id, SALES_DATASET, _encode(pending))


def clear_sales_pending(session: Session, store_id: str, done: PendingSales) -> None:
    """Forget what a sales build covered; `done` is what pending_sales returned before the
    build. Marks made after that read survive."""
    row = _locked(session, store_id, SALES_DATASET)
    pending = _decode(row.cursor if row else None)
    # While `full` is set, later marks are not listed: keep it if anything was marked since.
    if done.full and pending.seq == done.seq:
        pending.full = False
    pending.marks = {order_id: seq for order_id, seq in pending.marks.items() if seq > done.seq}
    set_cursor(session, store_id, SALES_DATASET, _encode(pending))


def sales_work_left(cursor: str | None) -> bool:
    """Whether a saved `sales` cursor (as list_cursors returns it) still lists orders."""
    pending = _decode(cursor)
    return pending.full or bool(pending.marks)


def _locked(session: Session, store_id: str, dataset: str) -> SyncCursor | None:
    # FOR UPDATE makes read-modify-write safe on PostgreSQL; SQLite serialises writers anyway.
    query = (
        select(SyncCursor)
        .where(SyncCursor.store_id == store_id, SyncCursor.dataset == dataset)
        .with_for_update()
    )
    return session.scalars(query).first()


def _decode(value: str | None) -> PendingSales:
    if not value:
        return PendingSales()
    data = json.loads(value)
    return PendingSales(
        full=bool(data.get("full")),
        marks={str(k): int(v) for k, v in data.get("marks", {}).items()},
        seq=int(data.get("seq", 0)),
    )


def _encode(pending: PendingSales) -> str:
    return json.dumps({"full": pending.full, "seq": pending.seq, "marks": pending.marks})
