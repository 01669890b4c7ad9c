"""Configurations in the registry: apply validated definitions, list them, find one a key
sees (registry.principals decides), and describe them as GET /v1/exports (and `quarry
exports list`) shows them."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from destinations.fields import is_env_reference
from exports.configs.change_starts import reset_starts
from exports.configs.definition import ExportDefinition
from exports.configs.document import AccountContext, read_document, validate_document
from exports.configs.dump import is_stored_reference
from exports.configs.problems import Problems
from quarry.crypto import SecretBox
from quarry.errors import Conflict, NotFound
from quarry.settings import Settings
from registry.accounts import get_account, list_stores
from registry.ids import new_id
from registry.models import ExportConfig, ExportJob
from registry.principals import Principal
from warehouse.query import StoreInfo


@dataclass(frozen=True)
class Applied:
    name: str
    id: str
    created: bool


def account_context(session: Session, settings: Settings, account_id: str) -> AccountContext:
    """What configurations of `account_id` are validated against (NotFound when unknown)."""
    account = get_account(session, account_id)
    stores = {
        s.id: StoreInfo(s.name, s.currency, s.timezone) for s in list_stores(session, account_id)
    }
    return AccountContext(account.id, account.currency, account.timezone, stores, settings)


def apply_file(session: Session, settings: Settings, account_id: str, path: Path) -> list[Applied]:
    """Validate every configuration of a YAML file, then create or update each by name.
    Nothing is written unless the whole file is valid."""
    definitions = check_file(session, settings, account_id, path)
    return apply_definitions(session, settings, account_id, definitions)


def check_file(
    session: Session, settings: Settings, account_id: str, path: Path
) -> list[ExportDefinition]:
    """Every configuration of a YAML file, validated (InvalidRequest naming file, key and
    problem), `{stored: true}` credentials replaced by the values stored for them."""
    context = account_context(session, settings, account_id)
    document = read_document(path)
    resolve_stored(session, settings, account_id, document, source=str(path))
    return validate_document(document, context, source=str(path))


def resolve_stored(
    session: Session, settings: Settings, account_id: str, document: Any, *, source: str
) -> None:
    """Replaces each `{stored: true}` credential (what `quarry exports dump` writes for a
    literal secret) by the value the account's configuration of that name holds. A
    reference with nothing stored behind it is an error: a secret is never made empty."""
    entries = document.get("exports") if isinstance(document, dict) else document
    if not isinstance(entries, list):
        return  # validation names the problem
    problems = Problems(source)
    box: SecretBox | None = None
    for index, entry in enumerate(entries):
        destination = entry.get("destination") if isinstance(entry, dict) else None
        credentials = destination.get("credentials") if isinstance(destination, dict) else None
        if not isinstance(credentials, dict):
            continue
        wanted = [name for name, value in credentials.items() if is_stored_reference(value)]
        if not wanted:
            continue
        name = str(entry.get("name", "")).strip()
        row = session.scalar(
            select(ExportConfig).where(
                ExportConfig.account_id == account_id, ExportConfig.name == name
            )
        )
        box = box or SecretBox(settings.fernet_keys)
        stored = box.open(row.credentials_secret) if row and row.credentials_secret else {}
        for credential in wanted:
            key = f"exports[{index}].destination.credentials.{credential}"
            if credential not in stored:
                problems.add(
                    key,
                    f"{{stored: true}} keeps the value stored for configuration {name!r}, "
                    "but it has none: give the value or an {env: VARIABLE} reference",
                )
                continue
            credentials[credential] = stored[credential]
    problems.raise_if_any()


def unset_variables(
    definitions: Sequence[ExportDefinition], environ: Mapping[str, str]
) -> list[str]:
    """A warning for each `{env: VARIABLE}` credential whose variable `environ` lacks."""
    warnings = []
    for definition in definitions:
        for name, value in definition.credentials.items():
            if is_env_reference(value) and value["env"] not in environ:
                warnings.append(
                    f"{definition.name!r}: credentials.{name} reads ${value['env']}, which is "
                    "not set here; runs read it where they execute (the worker role)"
                )
    return warnings


def delete_config(session: Session, config_id: str) -> list[str]:
    """Deletes a configuration with its finished jobs; returns the jobs' ids, whose files
    the caller removes once this is committed (a download racing the deletion then answers
    404, never half a file). Refused (Conflict) while one of its jobs is queued or running:
    the run would lose its configuration under it, and deliver a file of a configuration
    that no longer exists."""
    # The configuration's row is locked first: a job created meanwhile (its foreign key
    # takes a share lock on this row) waits for this transaction, and then finds no row.
    row = session.scalar(select(ExportConfig).where(ExportConfig.id == config_id).with_for_update())
    if row is None:
        raise NotFound(f"export configuration {config_id!r} does not exist")
    jobs = session.execute(
        select(ExportJob.id, ExportJob.status).where(ExportJob.config_id == config_id)
    ).all()
    busy = [job_id for job_id, status in jobs if status in ("queued", "running")]
    if busy:
        raise Conflict(
            f"export {row.name!r} has {len(busy)} queued or running job(s) "
            f"({', '.join(busy)}): wait for them to finish (or for the housekeeper to fail "
            "a job whose worker died), then delete it"
        )
    # Statements, not session.delete(): the unit of work does not know jobs depend on
    # their configuration and may delete the configuration first, the database's cascade
    # taking the jobs, which SQLAlchemy then warns it found no more.
    reset_starts(session, config_id)  # a changed-rows export's starts and their pins
    session.execute(delete(ExportJob).where(ExportJob.config_id == config_id))
    session.execute(delete(ExportConfig).where(ExportConfig.id == config_id))
    session.expunge(row)
    return [job_id for job_id, _ in jobs]


def reset_changes(session: Session, config_id: str) -> int:
    """A changed-rows configuration starts over: its next run delivers every row
    (exports.configs.change_starts). Conflict for a configuration of every row, or while a job
    of it is queued or running (that run would record its end as the new start). Returns
    how many stores had a start."""
    row = require_config(session, config_id)
    if row.definition.get("rows") != "changed":
        raise Conflict(f"export {row.name!r} delivers every row (rows: all): nothing to reset")
    busy = session.scalars(
        select(ExportJob.id).where(
            ExportJob.config_id == config_id, ExportJob.status.in_(("queued", "running"))
        )
    ).all()
    if busy:
        raise Conflict(
            f"export {row.name!r} has a queued or running job ({', '.join(busy)}): "
            "reset it once the job has ended"
        )
    return reset_starts(session, config_id)


def set_schedule_paused(session: Session, config_id: str, paused: bool) -> ExportConfig:
    """Pause or resume the configuration's schedule (idempotent). Either, on one without a
    schedule, is a Conflict: there is nothing to pause or resume, and a 200 would tell the
    client a schedule runs. A paused export still runs by hand."""
    row = require_config(session, config_id)
    if not row.schedule_cron:
        action = "pause" if paused else "resume"
        raise Conflict(f"export {row.name!r} has no schedule to {action}")
    row.schedule_paused = paused
    session.flush()
    return row


def apply_definitions(
    session: Session, settings: Settings, account_id: str, definitions: Sequence[ExportDefinition]
) -> list[Applied]:
    """Create or update configurations by (account, name); credentials are sealed."""
    box = SecretBox(settings.fernet_keys)
    applied = []
    for definition in definitions:
        row = session.scalar(
            select(ExportConfig).where(
                ExportConfig.account_id == account_id, ExportConfig.name == definition.name
            )
        )
        created = row is None
        if row is None:
            row = ExportConfig(id=new_id("exp"), account_id=account_id)
            session.add(row)
        sealed = box.seal(definition.credentials) if definition.credentials else None
        definition.fill(row, sealed)
        session.flush()
        applied.append(Applied(definition.name, row.id, created))
    return applied


def account_store_ids(session: Session, account_id: str) -> list[str]:
    return [s.id for s in list_stores(session, account_id)]


def list_configs(session: Session, account_id: str) -> list[ExportConfig]:
    query = select(ExportConfig).where(ExportConfig.account_id == account_id)
    return list(session.scalars(query.order_by(ExportConfig.name, ExportConfig.id)))


def get_visible_config(session: Session, principal: Principal, config_id: str) -> ExportConfig:
    """The configuration, or the same NotFound whether it is unknown, another account's, or
    reads a store the key cannot read."""
    row = session.get(ExportConfig, config_id)
    if row is None or not principal.sees_config(row):
        raise NotFound("there is no export configuration with this id")
    return row


def run_statistics(
    session: Session, config_ids: Collection[str]
) -> dict[str, tuple[int, ExportJob | None]]:
    """Per configuration: how many jobs it has had and its newest job."""
    if not config_ids:
        return {}
    counts: dict[str, int] = {
        config_id: count
        for config_id, count in session.execute(
            select(ExportJob.config_id, func.count())
            .where(ExportJob.config_id.in_(list(config_ids)))
            .group_by(ExportJob.config_id)
        )
    }
    newest: dict[str, ExportJob | None] = dict.fromkeys(config_ids)
    latest_ids = (
        select(ExportJob.config_id, func.max(ExportJob.created_at).label("at"))
        .where(ExportJob.config_id.in_(list(config_ids)))
        .group_by(ExportJob.config_id)
        .subquery()
    )
    rows = session.scalars(
        select(ExportJob).join(
            latest_ids,
            (ExportJob.config_id == latest_ids.c.config_id)
            & (ExportJob.created_at == latest_ids.c.at),
        )
    )
    for job in rows:
        newest[job.config_id] = job
    return {c: (int(counts.get(c, 0)), newest[c]) for c in config_ids}


def config_summary(
    row: ExportConfig, total_runs: int, last_run_at: datetime | None, last_status: str | None
) -> dict[str, Any]:
    """The Export configuration object of the contract."""
    return {
        "id": row.id,
        "name": row.name,
        "entity_type": row.entity_type,
        "format": row.format,
        "runnable_via_api": row.runnable_via_api,
        "last_run_at": last_run_at,
        "last_run_status": last_status,
        "total_runs": total_runs,
    }


def config_detail(
    row: ExportConfig,
    total_runs: int,
    last_run_at: datetime | None,
    last_status: str | None,
    store_ids: list[str],
) -> dict[str, Any]:
    """One configuration as GET /v1/exports/{id} shows it: the summary, then what it reads
    and where it goes. Credentials are never part of it (they are sealed apart, in
    `credentials_secret`); destination settings hold none by construction."""
    body = row.definition
    schedule = (
        {
            "cron": row.schedule_cron,
            "timezone": row.schedule_timezone,
            "paused": bool(row.schedule_paused),
        }
        if row.schedule_cron
        else None
    )
    return config_summary(row, total_runs, last_run_at, last_status) | {
        "stores": body.get("stores"),
        "store_ids": store_ids,
        "parts": [
            {
                "name": part.get("name"),
                "entity_type": part.get("entity_type"),
                "columns": part.get("columns", []),
                "filters": part.get("filters", {}),
                "query": part.get("query"),
            }
            for part in body.get("parts", [])
        ],
        "format_options": body.get("options", {}),
        "file_name": body.get("file_name"),
        "destination": {
            "kind": row.destination_kind,
            "settings": body.get("destination", {}).get("settings", {}),
            "has_credentials": row.credentials_secret is not None,
        },
        "schedule": schedule,
        "rows": body.get("rows") or "all",
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }


def require_config(session: Session, config_id: str) -> ExportConfig:
    row = session.get(ExportConfig, config_id)
    if row is None:
        raise NotFound(f"export configuration {config_id!r} does not exist")
    return row
