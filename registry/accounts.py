"""Accounts and stores: create, read, update. Plain functions over a session."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from quarry.currencies import CURRENCIES
from quarry.errors import InvalidRequest, NotFound
from quarry.zones import time_zones
from registry.ids import new_id
from registry.models import Account, Store


def check_timezone(name: str, field: str = "timezone") -> str:
    """`name` if it is an IANA zone, else InvalidRequest naming `field`."""
    if name not in time_zones():
        raise InvalidRequest(
            f"{field}: {name!r} is not an IANA time zone",
            errors=[{"field": field, "message": "not an IANA time zone"}],
        )
    return name


def check_currency(code: str, field: str = "currency") -> str:
    """`code` if it is an ISO 4217 currency (not XXX, "no currency", nor a metal or test code),
    else InvalidRequest naming `field`: every figure is converted to and rounded in it."""
    if code not in CURRENCIES:
        raise InvalidRequest(
            f"{field}: {code!r} is not an ISO 4217 currency code such as USD",
            errors=[{"field": field, "message": "not an ISO 4217 currency code"}],
        )
    return code


def check_name(name: str, field: str = "name") -> str:
    """`name` without surrounding spaces, if anything is left; else InvalidRequest."""
    name = name.strip()
    if not name:
        raise InvalidRequest(
            f"{field}: a name is required", errors=[{"field": field, "message": "empty"}]
        )
    return name


def create_account(
    session: Session,
    *,
    name: str,
    currency: str,
    timezone: str,
    api_enabled: bool = True,
    subscription_id: str | None = None,
) -> Account:
    account = Account(
        id=new_id("acc"),
        name=check_name(name),
        currency=check_currency(currency),
        timezone=check_timezone(timezone),
        api_enabled=api_enabled,
        subscription_id=subscription_id or new_id("sub"),
    )
    session.add(account)
    session.flush()
    return account


def get_account(session: Session, account_id: str) -> Account:
    account = session.get(Account, account_id)
    if account is None:
        raise NotFound(f"account {account_id!r} does not exist")
    return account


def list_accounts(session: Session) -> Sequence[Account]:
    return session.scalars(select(Account).order_by(Account.created_at, Account.id)).all()


def create_store(
    session: Session,
    *,
    account_id: str,
    name: str,
    domain: str,
    currency: str,
    timezone: str,
    platform: str,
    connection_secret: str | None = None,
    store_id: str | None = None,
) -> Store:
    get_account(session, account_id)
    store = Store(
        id=store_id or new_id("st", 10),
        account_id=account_id,
        name=name,
        domain=domain,
        currency=check_currency(currency),
        timezone=check_timezone(timezone),
        platform=platform,
        status="active",
        connection_secret=connection_secret,
    )
    session.add(store)
    session.flush()
    return store


def get_store(session: Session, store_id: str) -> Store:
    store = session.get(Store, store_id)
    if store is None:
        raise NotFound(f"store {store_id!r} does not exist")
    return store


def list_stores(session: Session, account_id: str | None = None) -> Sequence[Store]:
    """Every store, or an account's (NotFound when there is no such account: an empty
    list would read as an account without stores)."""
    query = select(Store).order_by(Store.account_id, Store.name, Store.id)
    if account_id is not None:
        get_account(session, account_id)
        query = query.where(Store.account_id == account_id)
    return session.scalars(query).all()
