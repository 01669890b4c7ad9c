"""Pending syncs: syncs of a store asked for outside the schedules (a Shopify webhook),
kept here until the housekeeper submits them, so no process's memory holds them.

A request opens a row due at the end of its debounce window; later requests for the store
join it until it has a run. The housekeeper takes a due row by a claim (an UPDATE that
only one process can win), submits the run, then records the run id; a row with a run id
is done and never submitted again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from registry.models import PendingSync, utcnow


@dataclass(frozen=True)
class DueSync:
    """A pending sync whose time has come; `claimed_at` is set when an earlier claim on
    it went stale (its claimer died or never recorded a run)."""

    id: int
    store_id: str
    reason: str
    claimed_at: datetime | None


def request_sync(session: Session, store_id: str, reason: str, due_at: datetime) -> bool:
    """Ask for a sync of `store_id` at `due_at`. True when this opened a new request;
    False when it joined the store's open one (which keeps its own, earlier time)."""
    values = {"store_id": store_id, "reason": reason, "due_at": due_at, "created_at": utcnow()}
    # ON CONFLICT on the partial unique index: concurrent requests never both insert, and
    # neither fails.
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = (
        insert(PendingSync)
        .values(**values)
        .on_conflict_do_nothing(
            index_elements=[PendingSync.store_id], index_where=PendingSync.run_id.is_(None)
        )
        .returning(PendingSync.id)
    )
    # RETURNING rather than rowcount, which the ORM's insert does not report faithfully.
    return session.execute(statement).first() is not None


def open_syncs(session: Session, store_id: str) -> list[PendingSync]:
    """The store's requests that have no run yet (at most one)."""
    return list(
        session.scalars(
            select(PendingSync).where(
                PendingSync.store_id == store_id, PendingSync.run_id.is_(None)
            )
        )
    )


def due_syncs(session: Session, now: datetime, stale_before: datetime) -> list[DueSync]:
    """Requests due by `now` without a run: unclaimed ones, and ones claimed before
    `stale_before`; oldest first."""
    rows = session.execute(
        select(PendingSync.id, PendingSync.store_id, PendingSync.reason, PendingSync.claimed_at)
        .where(
            PendingSync.run_id.is_(None),
            PendingSync.due_at <= now,
            PendingSync.claimed_at.is_(None) | (PendingSync.claimed_at < stale_before),
        )
        .order_by(PendingSync.due_at, PendingSync.id)
    ).all()
    return [DueSync(*row) for row in rows]


def claim(session: Session, due: DueSync, now: datetime) -> bool:
    """Take `due` for submission; False when another process took it first (its claim is
    no longer the one `due` was read with)."""
    previous = (
        PendingSync.claimed_at.is_(None)
        if due.claimed_at is None
        else PendingSync.claimed_at == due.claimed_at
    )
    result = session.execute(
        update(PendingSync)
        .where(PendingSync.id == due.id, PendingSync.run_id.is_(None), previous)
        .values(claimed_at=now)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def release(session: Session, sync_id: int, claimed_at: datetime) -> None:
    """Give back a claim whose submission failed, so the next pass tries again."""
    session.execute(
        update(PendingSync)
        .where(
            PendingSync.id == sync_id,
            PendingSync.run_id.is_(None),
            PendingSync.claimed_at == claimed_at,
        )
        .values(claimed_at=None)
    )


def record_run(session: Session, sync_id: int, run_id: str) -> None:
    """Mark the request done: `run_id` is the run submitted for it."""
    session.execute(
        update(PendingSync)
        .where(PendingSync.id == sync_id, PendingSync.run_id.is_(None))
        .values(run_id=run_id)
    )


def prune_done(session: Session, before: datetime) -> int:
    """Forget done requests claimed before `before`; how many were removed."""
    result = session.execute(
        delete(PendingSync).where(PendingSync.run_id.is_not(None), PendingSync.claimed_at < before)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]
