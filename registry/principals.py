"""What a key may read: THE rule, in one object.

A Principal is a live API key with its account and the account's stores, loaded in one
query per request (never cached: a revocation takes effect on the next request). Every
"may this key see it" question is one of its methods:
- `reads(requested)`: the stores a request reads (a key's store list narrows the account's);
- `sees_config(row)`: a configuration only when every store it reads is one the key reads;
- `sees_job(job)`: a job only when every store it holds is one the key reads.
api/auth.py turns HTTP into a Principal; nothing else decides visibility.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from sqlalchemy import Connection, bindparam, select

from quarry.errors import InvalidRequest
from registry.keys import digest, well_formed
from registry.models import Account, ApiKey, ExportConfig, ExportJob, Store


@dataclass(frozen=True)
class StoreView:
    """A store as a request sees it."""

    id: str
    name: str
    domain: str
    currency: str
    timezone: str
    status: str
    last_synced_at: datetime | None


@dataclass(frozen=True)
class Principal:
    """A live key with its account. `stores` are the stores the key reads, by name;
    `account_store_ids` every store of the account (what a configuration without a store
    list of its own reads)."""

    key_id: str
    account_id: str
    account_name: str
    subscription_id: str
    api_enabled: bool
    currency: str
    timezone: str
    scopes: tuple[str, ...]
    stores: tuple[StoreView, ...]
    account_store_ids: tuple[str, ...]

    # Computed once per request's principal: every visibility question asks them.
    @cached_property
    def store_ids(self) -> tuple[str, ...]:
        """The ids of the stores the key reads, sorted."""
        return tuple(sorted(store.id for store in self.stores))

    @cached_property
    def readable(self) -> frozenset[str]:
        return frozenset(self.store_ids)

    def reads(self, requested: Sequence[str] | None, field: str = "store_ids") -> tuple[str, ...]:
        """The stores a request reads: every store of the key when `requested` is None, else
        `requested`, which may only narrow. An id that does not exist and an id outside the
        key's stores give the very same 400 naming `field` and the id, so nothing leaks."""
        if requested is None:
            return self.store_ids
        for store_id in requested:
            if store_id not in self.readable:
                message = f"{store_id!r} is not a store this key can read"
                raise InvalidRequest(
                    f"{field}: {message}", errors=[{"field": field, "message": message}]
                )
        return tuple(dict.fromkeys(requested))

    def config_store_ids(self, row: ExportConfig) -> list[str]:
        """The stores configuration `row` reads: its own list, or every store of the account."""
        return config_store_ids(row, self.account_store_ids)

    def sees_config(self, row: ExportConfig) -> bool:
        return row.account_id == self.account_id and self.readable.issuperset(
            self.config_store_ids(row)
        )

    def sees_job(self, job: ExportJob) -> bool:
        return job.account_id == self.account_id and self.readable.issuperset(job.store_ids)


def config_store_ids(row: ExportConfig, account_stores: Sequence[str]) -> list[str]:
    """The stores a configuration reads: its own list, or every store of the account."""
    stores = row.definition.get("stores")
    return list(account_stores) if stores is None else list(stores)


# One Core query for the key, its account and the account's stores: at a tenth of the
# ORM's cost, which matters on every request.
_COLUMNS = (
    select(
        ApiKey.id,
        ApiKey.scopes,
        ApiKey.store_ids,
        Account.id,
        Account.name,
        Account.subscription_id,
        Account.api_enabled,
        Account.currency,
        Account.timezone,
        Store.id,
        Store.name,
        Store.domain,
        Store.currency,
        Store.timezone,
        Store.status,
        Store.last_synced_at,
    )
    .join(Account, Account.id == ApiKey.account_id)
    .outerjoin(Store, Store.account_id == Account.id)
    .order_by(Store.name, Store.id)
)
_PRINCIPAL = _COLUMNS.where(ApiKey.digest == bindparam("digest"), ApiKey.revoked_at.is_(None))
_PRINCIPAL_BY_ID = _COLUMNS.where(ApiKey.id == bindparam("key_id"), ApiKey.revoked_at.is_(None))


def load_principal(connection: Connection, secret: str) -> Principal | None:
    """The Principal of key `secret`, or None when it is malformed, unknown or revoked."""
    if not well_formed(secret):
        return None
    return _principal(connection.execute(_PRINCIPAL, {"digest": digest(secret)}).all())


def load_principal_by_key_id(connection: Connection, key_id: str) -> Principal | None:
    """The Principal of the live key `key_id` (a console session holds the key's id, never
    its secret), or None when the key is unknown or revoked. The same rule as by secret."""
    return _principal(connection.execute(_PRINCIPAL_BY_ID, {"key_id": key_id}).all())


def _principal(rows: Sequence[Any]) -> Principal | None:
    if not rows:
        return None
    key_id, scopes, key_stores, account_id, name, subscription, enabled, currency, zone = rows[0][
        :9
    ]
    owned = [StoreView(*row[9:]) for row in rows if row[9] is not None]
    # A key's store list narrows the account's stores; stores removed since drop out.
    allowed = owned if key_stores is None else [s for s in owned if s.id in set(key_stores)]
    return Principal(
        key_id=key_id,
        account_id=account_id,
        account_name=name,
        subscription_id=subscription,
        api_enabled=bool(enabled),
        currency=currency,
        timezone=zone,
        scopes=tuple(scopes),
        stores=tuple(allowed),
        account_store_ids=tuple(sorted(s.id for s in owned)),
    )
