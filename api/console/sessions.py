"""Console sessions: a sign-in with an API key exchanged for a cookie.

The cookie holds `<token>.<mac>`: a random token, signed with a key derived from the app's
secret key (so a forged or altered cookie is refused before any database look-up). The
registry keeps only the token's SHA-256 digest, with the key's id, the session's CSRF
token and its expiry; signing out marks the row revoked, so a copied cookie stops working
at once. The key's secret is never stored, and the key is looked up again on every request
(registry.principals), so revoking the key ends its sessions too.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import update
from sqlalchemy.orm import Session

from api.console.kept_secrets import forget_session
from registry.console_sessions import delete_ended_sessions
from registry.models import ConsoleSession, utcnow

COOKIE = "quarry_console"
_PURPOSE = b"quarry/console-session/v1"


@dataclass(frozen=True)
class Started:
    cookie: str
    csrf_token: str
    expires_at: datetime


@dataclass(frozen=True)
class Live:
    """A session that is signed, known, unexpired and not revoked."""

    id: str
    api_key_id: str
    csrf_token: str
    expires_at: datetime


def _mac(secret_key: str, token: str) -> str:
    key = hmac.new(secret_key.encode(), _PURPOSE, hashlib.sha256).digest()
    mac = hmac.new(key, token.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def start(session: Session, secret_keys: list[str], api_key_id: str, hours: float) -> Started:
    """A new session of key `api_key_id` for `hours`; the cookie value to set."""
    token = secrets.token_urlsafe(32)
    now = utcnow()
    expires_at = now + timedelta(hours=hours)
    csrf_token = secrets.token_urlsafe(32)
    # Ended sessions of every key go (the housekeeper deletes them too): the table does not
    # grow with sessions nobody signs in to again.
    delete_ended_sessions(session, now)
    session.add(
        ConsoleSession(
            id=_digest(token),
            api_key_id=api_key_id,
            csrf_token=csrf_token,
            created_at=now,
            expires_at=expires_at,
        )
    )
    return Started(f"{token}.{_mac(secret_keys[0], token)}", csrf_token, expires_at)


def _token(cookie: str | None, secret_keys: list[str]) -> str | None:
    """The token of a well-signed cookie (any of the rotation's keys), else None."""
    if not cookie or cookie.count(".") != 1:
        return None
    token, mac = cookie.split(".")
    if not any(hmac.compare_digest(_mac(key, token), mac) for key in secret_keys):
        return None
    return token


def find(session: Session, secret_keys: list[str], cookie: str | None) -> Live | None:
    """The live session of a cookie, or None (unsigned, unknown, expired or revoked)."""
    token = _token(cookie, secret_keys)
    if token is None:
        return None
    row = session.get(ConsoleSession, _digest(token))
    if row is None or row.revoked_at is not None or row.expires_at <= utcnow():
        return None
    return Live(row.id, row.api_key_id, row.csrf_token, row.expires_at)


def revoke(session: Session, session_id: str) -> None:
    """Ends the session server-side: its cookie is refused from now on, and the secrets
    its forms kept are dropped."""
    session.execute(
        update(ConsoleSession)
        .where(ConsoleSession.id == session_id, ConsoleSession.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )
    forget_session(session, session_id)
