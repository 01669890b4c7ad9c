"""The housekeeper's pass deletes console sessions that expired or were revoked (with the
form secrets they kept) and leaves live ones: nobody has to sign in again for them to go."""

from __future__ import annotations

from datetime import timedelta

from dagster import DagsterInstance
from sqlalchemy import select

from pipelines.housekeeping import housekeeping_pass
from quarry.settings import Settings
from registry.accounts import create_account
from registry.db import Registry
from registry.keys import create_key
from registry.models import ConsoleFormSecret, ConsoleSession, utcnow


def test_a_pass_deletes_ended_console_sessions(
    settings: Settings, registry: Registry, instance: DagsterInstance
) -> None:
    now = utcnow()
    with registry.session() as session:
        account = create_account(session, name="Housekept", currency="USD", timezone="UTC")
        key = create_key(session, account_id=account.id, scopes=["exports"]).row
        for name, expires_at, revoked_at in (
            ("expired", now - timedelta(seconds=1), None),
            ("revoked", now + timedelta(hours=1), now),
            ("live", now + timedelta(hours=1), None),
        ):
            session.add(
                ConsoleSession(
                    id=name,
                    api_key_id=key.id,
                    csrf_token="t",
                    created_at=now,
                    expires_at=expires_at,
                    revoked_at=revoked_at,
                )
            )
        session.flush()
        for name, session_id, expires_at in (
            ("of-expired", "expired", now + timedelta(minutes=5)),
            ("past-its-own", "live", now - timedelta(seconds=1)),
            ("kept", "live", now + timedelta(minutes=5)),
        ):
            session.add(
                ConsoleFormSecret(id=name, session_id=session_id, sealed="x", expires_at=expires_at)
            )
    done = housekeeping_pass(settings, registry, instance)
    assert done.console_sessions == 2
    with registry.session() as session:
        assert list(session.scalars(select(ConsoleSession.id))) == ["live"]
        assert list(session.scalars(select(ConsoleFormSecret.id))) == ["kept"]
