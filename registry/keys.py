"""API keys: shown once, stored only as a SHA-256 digest with a visible prefix.

Format: `qk_` + 43 base62 characters of 32 random bytes + 6 base62 characters of a CRC32
checksum, so a mistyped key is rejected without a database look-up.
"""

from __future__ import annotations

import hashlib
import secrets
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from quarry.errors import InvalidRequest, NotFound
from registry.accounts import get_account
from registry.ids import new_id
from registry.models import ApiKey, Store, utcnow

KEY_PREFIX = "qk_"
SCOPES = ("read_data", "exports")
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_BODY_LEN = 43
_CHECK_LEN = 6


def _base62(number: int, width: int) -> str:
    chars = []
    while number:
        number, rem = divmod(number, 62)
        chars.append(_BASE62[rem])
    return "".join(reversed(chars)).rjust(width, "0")


def _checksum(body: str) -> str:
    return _base62(zlib.crc32(body.encode()), _CHECK_LEN)


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def well_formed(key: str) -> bool:
    """True when `key` has the shape and checksum of a Quarry key."""
    if not key.startswith(KEY_PREFIX) or len(key) != len(KEY_PREFIX) + _BODY_LEN + _CHECK_LEN:
        return False
    body = key[len(KEY_PREFIX) : len(KEY_PREFIX) + _BODY_LEN]
    check = key[len(KEY_PREFIX) + _BODY_LEN :]
    if any(c not in _BASE62 for c in body + check):
        return False
    return secrets.compare_digest(_checksum(body), check)


@dataclass(frozen=True)
class IssuedKey:
    row: ApiKey
    secret: str


def create_key(
    session: Session,
    *,
    account_id: str,
    scopes: Sequence[str],
    store_ids: Sequence[str] | None = None,
) -> IssuedKey:
    """Issue a key. `store_ids` None means every store of the account, now and later."""
    get_account(session, account_id)
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown or not scopes:
        raise InvalidRequest(
            f"scopes: {', '.join(unknown) or '(none)'} not among {', '.join(SCOPES)}",
            errors=[{"field": "scopes", "message": f"allowed: {', '.join(SCOPES)}"}],
        )
    if store_ids is not None and not store_ids:
        # An empty list would be a key that reads nothing: almost surely a mistake for
        # "every store", which is spelled by giving no list at all.
        raise InvalidRequest(
            "stores: give at least one store id, or none for every store of the account",
            errors=[{"field": "stores", "message": "empty list"}],
        )
    if store_ids is not None:
        owned = set(session.scalars(select(Store.id).where(Store.account_id == account_id)).all())
        foreign = [s for s in store_ids if s not in owned]
        if foreign:
            raise InvalidRequest(
                f"stores: {', '.join(foreign)} not stores of account {account_id}",
                errors=[{"field": "stores", "message": "not a store of the account"}],
            )
    body = _base62(secrets.randbits(256), _BODY_LEN)
    secret = KEY_PREFIX + body + _checksum(body)
    row = ApiKey(
        id=new_id("key"),
        account_id=account_id,
        prefix=secret[:11],
        digest=digest(secret),
        scopes=sorted(set(scopes)),
        store_ids=sorted(set(store_ids)) if store_ids is not None else None,
    )
    session.add(row)
    session.flush()
    return IssuedKey(row, secret)


def list_keys(session: Session, account_id: str | None = None) -> Sequence[ApiKey]:
    """Every key, or an account's (NotFound when there is no such account)."""
    query = select(ApiKey).order_by(ApiKey.created_at, ApiKey.id)
    if account_id is not None:
        get_account(session, account_id)
        query = query.where(ApiKey.account_id == account_id)
    return session.scalars(query).all()


def revoke_key(session: Session, key_id: str) -> ApiKey:
    row = session.get(ApiKey, key_id)
    if row is None:
        raise NotFound(f"key {key_id!r} does not exist")
    if row.revoked_at is None:
        row.revoked_at = utcnow()
    return row
