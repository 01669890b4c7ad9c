"""Creating jobs: the row first, two runs two jobs, the Idempotency-Key window, and who
may see a job."""

from __future__ import annotations

from datetime import timedelta

import pytest

from exports.jobs.lifecycle import check_idempotency_key, create_job, get_visible_job
from quarry.errors import InvalidRequest, NotFound
from registry.models import ExportConfig, utcnow
from tests.api.world import World
from tests.exports.conftest import apply_yaml
from tests.factories import principal_for


@pytest.fixture(scope="module")
def config_ids(export_world: World) -> dict[str, str]:
    return apply_yaml(
        export_world,
        "a",
        {
            "exports": [
                {"name": "Jobs one", "entity_type": "orders", "format": "csv",
                 "stores": ["st_a1"]},
                {"name": "Jobs all", "entity_type": "customers", "format": "csv"},
            ]
        },
    )  # fmt: skip


def test_two_runs_make_two_queued_jobs(export_world: World, config_ids: dict[str, str]) -> None:
    with export_world.registry.session() as session:
        config = session.get(ExportConfig, config_ids["Jobs one"])
        first, created_first = create_job(session, config)
        second, created_second = create_job(session, config)
        assert created_first and created_second and first.id != second.id
        assert first.status == second.status == "queued"
        assert first.store_ids == ["st_a1"]
        every, _ = create_job(session, session.get(ExportConfig, config_ids["Jobs all"]))
        assert every.store_ids == ["st_a1", "st_a2", "st_a3"]


def test_the_same_idempotency_key_answers_the_same_job_for_24_hours(
    export_world: World, config_ids: dict[str, str]
) -> None:
    now = utcnow()
    with export_world.registry.session() as session:
        one = session.get(ExportConfig, config_ids["Jobs one"])
        other = session.get(ExportConfig, config_ids["Jobs all"])
        job, created = create_job(session, one, idempotency_key="k-1", now=now)
        again, created_again = create_job(
            session, one, idempotency_key="k-1", now=now + timedelta(hours=23)
        )
        assert created and not created_again and again.id == job.id
        elsewhere, created_elsewhere = create_job(session, other, idempotency_key="k-1", now=now)
        assert created_elsewhere and elsewhere.id != job.id
        later, created_later = create_job(
            session, one, idempotency_key="k-1", now=now + timedelta(hours=24, seconds=1)
        )
        assert created_later and later.id != job.id


@pytest.mark.parametrize("value", ["", " lead", "x" * 256, "naïve", "tab\there"])
def test_bad_idempotency_keys(value: str) -> None:
    with pytest.raises(InvalidRequest, match="Idempotency-Key"):
        check_idempotency_key(value)


def test_jobs_are_visible_only_to_keys_reading_all_their_stores(
    export_world: World, config_ids: dict[str, str]
) -> None:
    account = export_world.accounts["a"]
    with export_world.registry.session() as session:
        job, _ = create_job(session, session.get(ExportConfig, config_ids["Jobs one"]))
        assert get_visible_job(session, principal_for(account, ["st_a1"]), job.id).id == job.id
        for account_id, readable in ((account, ["st_a2"]), (export_world.accounts["b"], None)):
            with pytest.raises(NotFound) as hidden:
                get_visible_job(session, principal_for(account_id, readable or ["st_a1"]), job.id)
            with pytest.raises(NotFound) as unknown:
                get_visible_job(session, principal_for(account, ["st_a1"]), "job_nope")
            assert hidden.value.detail == unknown.value.detail
