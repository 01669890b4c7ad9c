"""Accounts and stores on both databases: create, get, list; timestamps come back UTC and
timezone-aware; bad input is refused before anything is written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import StatementError

from quarry.errors import InvalidRequest, NotFound
from registry.accounts import (
    get_account,
    get_store,
    list_accounts,
    list_stores,
)
from registry.db import Registry
from registry.models import Account, Store
from tests.factories import add_account, add_store


def test_an_account_reads_back_as_created(registry: Registry) -> None:
    before = datetime.now(UTC)
    account_id = add_account(registry, "Acme", currency="CAD", timezone="America/Toronto")
    with registry.session() as session:
        account = get_account(session, account_id)
        assert account.id.startswith("acc_")
        assert (account.name, account.currency, account.timezone) == (
            "Acme",
            "CAD",
            "America/Toronto",
        )
        assert account.api_enabled is True
        assert account.subscription_id.startswith("sub_")
        assert account.created_at.tzinfo is not None
        assert account.created_at.utcoffset() == timedelta(0)
        assert before - timedelta(seconds=5) <= account.created_at <= datetime.now(UTC)


def test_accounts_list_in_creation_order(registry: Registry) -> None:
    first = add_account(registry, "First")
    second = add_account(registry, "Second")
    with registry.session() as session:
        assert [a.id for a in list_accounts(session)] == [first, second]


def test_an_unknown_account_is_not_found(registry: Registry) -> None:
    with registry.session() as session, pytest.raises(NotFound, match="acc_nope"):
        get_account(session, "acc_nope")


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"currency": "usd"}, "currency"),
        ({"currency": "DOLLARS"}, "currency"),
        ({"currency": "U$D"}, "currency"),
        # ISO 4217's code for "no currency", and a code of the right shape that is none.
        ({"currency": "XXX"}, "currency"),
        ({"currency": "ABC"}, "currency"),
        ({"name": ""}, "name"),
        ({"name": " \t "}, "name"),
        ({"timezone": "Mars/Olympus_Mons"}, "timezone"),
        ({"timezone": "../../etc/passwd"}, "timezone"),
        ({"timezone": "Europe/../Europe/Berlin"}, "timezone"),
        ({"timezone": "a" * 300}, "timezone"),  # ZoneInfo's OSError: name too long
        ({"timezone": "localtime"}, "timezone"),  # the server's own zone
        ({"timezone": ""}, "timezone"),
    ],
)
def test_bad_name_currency_or_timezone_writes_nothing(
    registry: Registry, fields: dict[str, str], field: str
) -> None:
    with pytest.raises(InvalidRequest) as caught:
        add_account(registry, **fields)
    assert caught.value.detail.startswith(f"{field}:")
    assert caught.value.errors[0]["field"] == field
    with registry.session() as session:
        assert session.scalar(select(func.count()).select_from(Account)) == 0


def test_a_store_reads_back_as_created(registry: Registry) -> None:
    account_id = add_account(registry)
    store_id = add_store(registry, account_id, "Berlin")
    with registry.session() as session:
        store = get_store(session, store_id)
        assert (store.account_id, store.name, store.domain) == (
            account_id,
            "Berlin",
            "berlin.example",
        )
        assert (store.currency, store.timezone, store.platform) == ("EUR", "Europe/Berlin", "demo")
        assert store.status == "active"
        assert store.last_synced_at is None
        assert store.created_at.utcoffset() == timedelta(0)


def test_stores_list_by_account(registry: Registry) -> None:
    acme = add_account(registry, "Acme")
    other = add_account(registry, "Other")
    b = add_store(registry, acme, "B")
    a = add_store(registry, acme, "A")
    elsewhere = add_store(registry, other, "C")
    with registry.session() as session:
        assert [s.id for s in list_stores(session, acme)] == [a, b]
        assert {s.id for s in list_stores(session)} == {a, b, elsewhere}
        # An empty list would read as an account without stores.
        with pytest.raises(NotFound, match="acc_nope"):
            list_stores(session, "acc_nope")


def test_a_store_needs_an_existing_account(registry: Registry) -> None:
    with pytest.raises(NotFound, match="acc_nope"):
        add_store(registry, "acc_nope")
    with registry.session() as session:
        assert session.scalar(select(func.count()).select_from(Store)) == 0


def test_bad_store_currency_writes_nothing(registry: Registry) -> None:
    account_id = add_account(registry)
    with pytest.raises(InvalidRequest, match="currency"):
        add_store(registry, account_id, currency="euro")
    with registry.session() as session:
        assert list_stores(session) == []


def test_an_unknown_store_is_not_found(registry: Registry) -> None:
    with registry.session() as session, pytest.raises(NotFound, match="st_nope"):
        get_store(session, "st_nope")


def test_timestamps_are_stored_in_utc_and_come_back_aware(registry: Registry) -> None:
    account_id = add_account(registry)
    store_id = add_store(registry, account_id)
    tokyo = timezone(timedelta(hours=9))
    synced = datetime(2026, 3, 1, 9, 30, tzinfo=tokyo)
    with registry.session() as session:
        get_store(session, store_id).last_synced_at = synced
    # A new session reads the row from the database, not from the identity map.
    with registry.session() as session:
        stored = get_store(session, store_id).last_synced_at
    assert stored == synced
    assert stored is not None and stored.tzinfo is not None
    assert stored.utcoffset() == timedelta(0)
    assert stored.hour == 0 and stored.minute == 30


def test_a_naive_timestamp_is_refused(registry: Registry) -> None:
    account_id = add_account(registry)
    store_id = add_store(registry, account_id)
    with pytest.raises(StatementError, match="naive datetime"), registry.session() as session:
        get_store(session, store_id).last_synced_at = datetime(2026, 3, 1, 9, 30)
        session.flush()


def test_removing_an_account_removes_its_stores(registry: Registry) -> None:
    """Foreign keys cascade on both databases (SQLite needs its pragma for that)."""
    account_id = add_account(registry)
    add_store(registry, account_id)
    with registry.session() as session:
        session.execute(text("DELETE FROM accounts WHERE id = :id"), {"id": account_id})
    with registry.session() as session:
        assert list_stores(session) == []
