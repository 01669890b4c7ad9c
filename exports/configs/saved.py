"""Configurations in the registry: apply validated definitions, list them, find one a key
sees (registry.principals decides), and describe them as GET /v1/exports (and `quarry
exports list`) shows them."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from exports.configs.definition import ExportDefinition
from exports.configs.document import AccountContext, load_file
from quarry.crypto import SecretBox
from quarry.errors import NotFound
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
    definitions = load_file(path, account_context(session, settings, account_id))
    return apply_definitions(session, settings, account_id, definitions)


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
        {"cron": row.schedule_cron, "timezone": row.schedule_timezone}
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
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }


def require_config(session: Session, config_id: str) -> ExportConfig:
    row = session.get(ExportConfig, config_id)
    if row is None:
        raise NotFound(f"export configuration {config_id!r} does not exist")
    return row
