"""Published snapshots and pins in the registry, on SQLite and PostgreSQL: the newest per
store, and which lake versions maintenance must keep."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import update

from quarry.settings import Settings, load_settings
from registry.db import Registry
from registry.models import WarehouseSnapshot, utcnow
from tests.warehouse.conftest import add_stores
from warehouse.snapshots import (
    forget_expired_pins,
    latest_snapshots,
    pin,
    record_snapshot,
    release,
    versions_in_use,
)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def registry(request: pytest.FixtureRequest, quarry_env: Settings) -> Iterator[Registry]:
    settings = quarry_env
    if request.param == "postgresql":
        settings = load_settings(database_url=request.getfixturevalue("postgres_url"))
    reg = Registry(settings)
    add_stores(reg)
    yield reg
    reg.dispose()


def test_the_newest_snapshot_per_store_wins(registry: Registry) -> None:
    record_snapshot(registry, "st_a", 1)
    record_snapshot(registry, "st_b", 2)
    record_snapshot(registry, "st_a", 4)

    with registry.session() as session:
        latest = latest_snapshots(session, ["st_a", "st_b", "st_never_synced"])

    assert latest == {"st_a": 4, "st_b": 2}


def test_latest_snapshots_of_no_store_or_every_store(registry: Registry) -> None:
    record_snapshot(registry, "st_a", 1)
    record_snapshot(registry, "st_b", 2)
    with registry.session() as session:
        assert latest_snapshots(session, []) == {}
        assert latest_snapshots(session) == {"st_a": 1, "st_b": 2}


def _age_all_snapshots(registry: Registry, by: timedelta) -> None:
    """Every snapshot recorded so far was recorded `by` ago."""
    with registry.session() as session:
        session.execute(update(WarehouseSnapshot).values(created_at=utcnow() - by))


def test_versions_in_use_are_published_recently_replaced_or_pinned(registry: Registry) -> None:
    record_snapshot(registry, "st_a", 1)
    record_snapshot(registry, "st_a", 5)
    record_snapshot(registry, "st_b", 3)
    _age_all_snapshots(registry, timedelta(hours=2))
    # Replaced just now: a request that looked up st_a a moment ago may still read 5.
    record_snapshot(registry, "st_a", 7)
    pin(registry, "export-1", [1, 2], ttl=timedelta(hours=1))
    pin(registry, "dead-export", [4], ttl=timedelta(seconds=-1))

    with registry.session() as session:
        assert versions_in_use(session, grace=timedelta(hours=1)) == {7, 3, 5, 1, 2}
        # With no grace period only what is published or pinned stays.
        assert versions_in_use(session, grace=timedelta(0)) == {7, 3, 1, 2}

    release(registry, "export-1")
    with registry.session() as session:
        assert versions_in_use(session, grace=timedelta(0)) == {7, 3}
        forget_expired_pins(session)
    with registry.session() as session:
        assert versions_in_use(session, grace=timedelta(hours=1), now=utcnow()) == {7, 3, 5}


@pytest.mark.parametrize(
    ("store", "version", "message"),
    [
        ("st_a", -1, "non-negative"),
        ("st_a", "3", "non-negative"),
        ("st_a", True, "non-negative"),
        ("st_missing", 1, "does not exist"),
    ],
)
def test_bad_snapshots_are_refused(
    registry: Registry, store: str, version: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        record_snapshot(registry, store, version)  # type: ignore[arg-type]
    with registry.session() as session:
        assert latest_snapshots(session) == {}
