"""The housekeeper's pass deletes console sessions that expired or were revoked (with the
form secrets they kept) and leaves live ones: nobody has to sign in again for them to go;
and it removes export files past the retention, zero days included."""

from __future__ import annotations

from datetime import timedelta

from dagster import DagsterInstance
from sqlalchemy import select

from exports.files.cleanup import remove_expired_files
from pipelines.housekeeping import housekeeping_pass
from quarry.files import export_files
from quarry.settings import Settings
from registry.accounts import create_account
from registry.db import Registry
from registry.keys import create_key
from registry.models import (
    ConsoleFormSecret,
    ConsoleSession,
    ExportConfig,
    ExportJob,
    utcnow,
)


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


def test_a_retention_of_zero_days_removes_the_files_of_ended_jobs_only(
    settings: Settings, registry: Registry, instance: DagsterInstance
) -> None:
    """QUARRY_EXPORT_RETENTION_DAYS=0 keeps no file past its job (it used to act as unset);
    a job still running keeps its file, which it records before delivering it."""
    files = export_files(settings)
    now = utcnow()
    with registry.session() as session:
        account = create_account(session, name="Kept nothing", currency="USD", timezone="UTC")
        config = ExportConfig(
            id="exp_zero", account_id=account.id, name="Zero", entity_type="orders",
            format="csv", definition={},
        )  # fmt: skip
        session.add(config)
        session.flush()
        for job_id, status, finished_at in (
            ("job_done", "completed", now),
            ("job_delivering", "running", None),
        ):
            key = f"{job_id}/out.csv"
            files.make_parent(key)
            files.put_bytes(key, b"id\n1\n")
            session.add(
                ExportJob(
                    id=job_id, config_id=config.id, account_id=account.id, status=status,
                    created_at=now - timedelta(minutes=1), started_at=now,
                    finished_at=finished_at, file_path=key, file_name="out.csv",
                    heartbeat_at=now,
                )
            )  # fmt: skip
    assert remove_expired_files(settings, registry, 0) == ["job_done"]
    assert files.size("job_done/out.csv") is None
    assert files.size("job_delivering/out.csv") == 5
    with registry.session() as session:
        session.get_one(ExportJob, "job_delivering").finished_at = utcnow()
        session.get_one(ExportJob, "job_delivering").status = "completed"
    zero = settings.model_copy(update={"export_retention_days": 0})
    assert housekeeping_pass(zero, registry, instance).expired == ["job_delivering"]
    assert files.size("job_delivering/out.csv") is None
