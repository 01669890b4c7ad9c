"""Pending syncs on both databases: one open request per store, however many processes ask
at once; a due request is claimed by one process only; a failed submission is given back;
done requests are pruned; a removed store takes its requests with it."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from sqlalchemy import delete, select

from registry.db import Registry
from registry.models import PendingSync, Store, utcnow
from registry.pending_syncs import (
    claim,
    due_syncs,
    open_syncs,
    prune_done,
    record_run,
    release,
    request_sync,
)
from tests.factories import add_account, add_store


def test_requests_join_the_open_one_until_it_has_a_run(registry: Registry) -> None:
    store_id = add_store(registry, add_account(registry))
    now = utcnow()
    with registry.session() as session:
        assert request_sync(session, store_id, "webhook", now + timedelta(seconds=60))
        assert not request_sync(session, store_id, "webhook", now + timedelta(seconds=90))
        [pending] = open_syncs(session, store_id)
        assert pending.due_at == now + timedelta(seconds=60)  # the window does not slide
        record_run(session, pending.id, "run-1")
        assert request_sync(session, store_id, "webhook", now + timedelta(seconds=120))
        assert len(session.scalars(select(PendingSync)).all()) == 2


def test_concurrent_requests_open_one(registry: Registry) -> None:
    store_id = add_store(registry, add_account(registry))
    barrier = threading.Barrier(4)

    def ask() -> bool:
        barrier.wait()
        with registry.session() as session:
            return request_sync(session, store_id, "webhook", utcnow())

    with ThreadPoolExecutor(4) as pool:
        opened = list(pool.map(lambda _: ask(), range(4)))
    assert sorted(opened) == [False, False, False, True]


def test_a_due_request_is_claimed_once_and_released_after_a_failure(registry: Registry) -> None:
    store_id = add_store(registry, add_account(registry))
    other = add_store(registry, add_account(registry, "B"), "B")
    now = utcnow()
    with registry.session() as session:
        request_sync(session, store_id, "webhook", now)
        request_sync(session, other, "webhook", now)
        [first, later] = due_syncs(session, now, stale_before=now - timedelta(minutes=2))
        assert due_syncs(session, now - timedelta(seconds=1), now) == []
    assert first.store_id == store_id
    with registry.session() as session:
        assert claim(session, first, now)
    with registry.session() as session:
        assert not claim(session, first, now)  # read before the claim: another process's
        assert [d.id for d in due_syncs(session, now, now - timedelta(minutes=2))] == [later.id]
        release(session, first.id, now)
        again = due_syncs(session, now, now - timedelta(minutes=2))
    assert [d.id for d in again] == [first.id, later.id]
    assert again[0].claimed_at is None


def test_a_stale_claim_is_due_again_and_claimed_by_one(registry: Registry) -> None:
    store_id = add_store(registry, add_account(registry))
    then = utcnow() - timedelta(minutes=5)
    with registry.session() as session:
        request_sync(session, store_id, "webhook", then)
        [due] = due_syncs(session, then, then)
        assert claim(session, due, then)
    now = utcnow()
    with registry.session() as session:
        [stale] = due_syncs(session, now, stale_before=now - timedelta(minutes=2))
    assert stale.claimed_at == then
    with registry.session() as session:
        assert claim(session, stale, now)
        assert not claim(session, stale, now)


def test_done_requests_are_pruned_and_removed_stores_take_theirs(registry: Registry) -> None:
    kept, removed = (add_store(registry, add_account(registry, n), n) for n in ("A", "B"))
    old = utcnow() - timedelta(days=2)
    with registry.session() as session:
        for store_id in (kept, removed):
            request_sync(session, store_id, "webhook", old)
        [done, _] = due_syncs(session, old, old)
        claim(session, done, old)
        record_run(session, done.id, "run-1")
        request_sync(session, kept, "webhook", old)
        assert prune_done(session, utcnow() - timedelta(days=1)) == 1
        session.execute(delete(Store).where(Store.id == removed))
    with registry.session() as session:
        assert [p.store_id for p in session.scalars(select(PendingSync))] == [kept]
