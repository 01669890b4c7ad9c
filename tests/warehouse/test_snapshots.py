"""Snapshots in the registry, on SQLite and PostgreSQL: the newest per store, carrying
forward the tables a sync did not rewrite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from quarry.settings import Settings, load_settings
from registry.db import Registry
from tests.warehouse.conftest import add_stores
from warehouse.snapshots import latest_snapshots, record_snapshot, referenced_versions


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def registry(request: pytest.FixtureRequest, quarry_env: Settings) -> Iterator[Registry]:
    settings = quarry_env
    if request.param == "postgresql":
        settings = load_settings(database_url=request.getfixturevalue("postgres_url"))
    reg = Registry(settings)
    add_stores(reg)
    yield reg
    reg.dispose()


def test_newest_snapshot_per_store_carries_earlier_tables(registry: Registry) -> None:
    record_snapshot(registry, "st_a", {"orders": 1, "order_lines": 1})
    record_snapshot(registry, "st_b", {"orders": 2})
    record_snapshot(registry, "st_a", {"customers": 3})
    record_snapshot(registry, "st_a", {"orders": 4, "order_lines": 4})

    with registry.session() as session:
        latest = latest_snapshots(session, ["st_a", "st_b", "st_never_synced"])

    assert latest == {
        "st_a": {"orders": 4, "order_lines": 4, "customers": 3},
        "st_b": {"orders": 2},
    }


def test_latest_snapshots_of_no_store_or_every_store(registry: Registry) -> None:
    record_snapshot(registry, "st_a", {"orders": 1})
    record_snapshot(registry, "st_b", {"orders": 2})
    with registry.session() as session:
        assert latest_snapshots(session, []) == {}
        assert set(latest_snapshots(session)) == {"st_a", "st_b"}


def test_referenced_versions_are_those_of_the_newest_snapshots(registry: Registry) -> None:
    record_snapshot(registry, "st_a", {"orders": 1})
    record_snapshot(registry, "st_a", {"orders": 5})
    record_snapshot(registry, "st_b", {"orders": 3, "customers": 2})
    with registry.session() as session:
        assert referenced_versions(session, "orders") == {3, 5}
        assert referenced_versions(session, "customers") == {2}
        assert referenced_versions(session, "sales") == set()


@pytest.mark.parametrize(
    ("store", "versions", "message"),
    [
        ("st_a", {"ordres": 1}, "not warehouse tables"),
        ("st_a", {"orders": -1}, "non-negative"),
        ("st_a", {"orders": "3"}, "non-negative"),
        ("st_missing", {"orders": 1}, "does not exist"),
    ],
)
def test_bad_snapshots_are_refused(
    registry: Registry, store: str, versions: dict, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        record_snapshot(registry, store, versions)
    with registry.session() as session:
        assert latest_snapshots(session) == {}
