"""Clearing out web console sessions (api/console/sessions.py makes and checks them): rows
of sessions that have expired or were revoked, and the form secrets they kept, are of no
use once the cookie is refused. Run on every console sign-in (any key) and by the
housekeeper's pass, so the tables do not grow with sessions nobody signs in to again."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, or_, select
from sqlalchemy.orm import Session

from registry.models import ConsoleFormSecret, ConsoleSession, utcnow


def delete_ended_sessions(session: Session, now: datetime | None = None) -> int:
    """Deletes every console session expired or revoked by `now` (default: now), with the
    form secrets it kept, and every form secret past its own expiry; the number of
    sessions deleted."""
    now = now or utcnow()
    ended = or_(ConsoleSession.expires_at <= now, ConsoleSession.revoked_at.is_not(None))
    # Explicitly rather than by ON DELETE CASCADE alone: one statement, whichever database.
    session.execute(
        delete(ConsoleFormSecret).where(
            or_(
                ConsoleFormSecret.expires_at <= now,
                ConsoleFormSecret.session_id.in_(select(ConsoleSession.id).where(ended)),
            )
        )
    )
    deleted = session.execute(delete(ConsoleSession).where(ended))
    return int(getattr(deleted, "rowcount", 0) or 0)
