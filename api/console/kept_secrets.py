"""Secrets typed into an export form that comes back (a problem to fix, a preview, a
refreshed form) are kept here rather than sent back to the browser (docs/console.md).

The form carries a random handle in a hidden field; the registry keeps only the handle's
SHA-256 digest, the secrets sealed with the app's SecretBox (the one that seals stored
destination credentials), the console session they belong to and an expiry KEEP_MINUTES
ahead. A handle is useless without its session's cookie. Saving the form, signing out and
the expiry end it; expired rows are deleted by registry.console_sessions.delete_ended.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from sqlalchemy import delete
from sqlalchemy.orm import Session

from quarry.crypto import SecretBox
from quarry.errors import ConfigurationError
from registry.models import ConsoleFormSecret, utcnow

FIELD = "kept_secrets"
KEEP_MINUTES = 30


def _digest(handle: str) -> str:
    return hashlib.sha256(handle.encode()).hexdigest()


def _row(session: Session, session_id: str, handle: str | None) -> ConsoleFormSecret | None:
    if not handle:
        return None
    row = session.get(ConsoleFormSecret, _digest(handle))
    if row is None or row.session_id != session_id:
        return None
    return row


def load(session: Session, box: SecretBox, session_id: str, handle: str | None) -> dict[str, str]:
    """Credential name -> secret kept under `handle` for this console session; empty when
    the handle is unknown, another session's, expired or sealed with a retired key."""
    row = _row(session, session_id, handle)
    if row is None or row.expires_at <= utcnow():
        return {}
    try:
        opened = box.open(row.sealed)
    except ConfigurationError:
        return {}
    return {str(k): str(v) for k, v in opened.items()}


def keep(
    session: Session, box: SecretBox, session_id: str, handle: str | None, values: dict[str, str]
) -> str:
    """Seals `values` under `handle` (a new handle when it is None or not this session's)
    for KEEP_MINUTES from now, replacing what it held; the handle for the form."""
    row = _row(session, session_id, handle)
    expires_at = utcnow() + timedelta(minutes=KEEP_MINUTES)
    if row is None or handle is None:
        handle = secrets.token_urlsafe(32)
        row = ConsoleFormSecret(id=_digest(handle), session_id=session_id)
        session.add(row)
    row.sealed = box.seal(values)
    row.expires_at = expires_at
    return handle


def forget(session: Session, session_id: str, handle: str | None) -> None:
    """Drops what `handle` keeps (the form was saved)."""
    if handle:
        session.execute(
            delete(ConsoleFormSecret).where(
                ConsoleFormSecret.id == _digest(handle), ConsoleFormSecret.session_id == session_id
            )
        )


def forget_session(session: Session, session_id: str) -> None:
    """Drops everything the session keeps (sign-out)."""
    session.execute(delete(ConsoleFormSecret).where(ConsoleFormSecret.session_id == session_id))
