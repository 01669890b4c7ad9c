"""The housekeeper's side of webhook-triggered syncs (pipelines.sync.triggers): a submission
Dagster refuses is tried again on the next pass; a claim left by a housekeeper that died
while submitting is matched to the run it made (found by its tag), or submitted again when
it made none. (Deliveries to submission, across an API restart:
tests/api/test_shopify_webhooks.py; with a real Dagster: tests/exports/test_webhook_sync.py.)"""

from __future__ import annotations

from datetime import timedelta

from dagster import DagsterInstance, job, op

from pipelines.sync.triggers import CLAIM_TIMEOUT, PENDING_SYNC_TAG, submit_due_syncs
from quarry.settings import Settings
from registry.db import Registry
from registry.models import PendingSync, utcnow
from registry.pending_syncs import claim, due_syncs, request_sync
from tests.factories import add_account, add_store


@op
def nothing() -> None:
    pass


@job
def stand_in() -> None:
    nothing()


class Dagster:
    """Takes submissions (or refuses them while `down`), numbering the runs."""

    def __init__(self) -> None:
        self.down = False
        self.runs: list[dict[str, str]] = []

    def __call__(self, _settings: Settings, job_name: str, tags: dict[str, str]) -> str:
        if self.down:
            raise ConnectionError("Connection refused")
        self.runs.append(tags)
        return f"run-{len(self.runs)}"


def pending(registry: Registry) -> PendingSync:
    with registry.session() as session:
        [row] = session.query(PendingSync).all()
        return row


def test_a_refused_submission_is_tried_again(
    settings: Settings, registry: Registry, instance: DagsterInstance
) -> None:
    store_id = add_store(registry, add_account(registry))
    with registry.session() as session:
        request_sync(session, store_id, "webhook", utcnow())
    dagster = Dagster()
    dagster.down = True
    assert submit_due_syncs(settings, registry, instance, submit=dagster) == []
    assert pending(registry).claimed_at is None  # given back, not left claimed
    dagster.down = False
    assert submit_due_syncs(settings, registry, instance, submit=dagster) == ["run-1"]
    assert submit_due_syncs(settings, registry, instance, submit=dagster) == []
    assert pending(registry).run_id == "run-1"


def test_a_stale_claim_is_matched_to_its_run_or_submitted_again(
    settings: Settings, registry: Registry, instance: DagsterInstance
) -> None:
    made_a_run, made_none = (add_store(registry, add_account(registry, n), n) for n in "AB")
    then = utcnow() - CLAIM_TIMEOUT - timedelta(seconds=1)
    with registry.session() as session:
        for store_id in (made_a_run, made_none):
            request_sync(session, store_id, "webhook", then)
        claimed = due_syncs(session, then, then)
    with registry.session() as session:
        assert all(claim(session, due, then) for due in claimed)
    # The first claimer died after Dagster took its run, before recording it.
    run = instance.create_run_for_job(stand_in, tags={PENDING_SYNC_TAG: str(claimed[0].id)})
    dagster = Dagster()
    assert submit_due_syncs(settings, registry, instance, submit=dagster) == ["run-1"]
    assert [tags["dagster/partition"] for tags in dagster.runs] == [made_none]
    with registry.session() as session:
        runs = {p.store_id: p.run_id for p in session.query(PendingSync)}
    assert runs == {made_a_run: run.run_id, made_none: "run-1"}
