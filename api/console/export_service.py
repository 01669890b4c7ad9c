"""What the console does with an export form, through the functions `quarry exports apply`
uses: `{stored: true}` resolved as `apply` resolves it, the entry validated by
exports.configs.document, previewed by exports.files.produce.preview (the run's own reads,
as `apply --dry-run`), saved by exports.configs.saved.apply_definitions, and read back for
editing as `quarry exports dump` writes it. Nothing here validates on its own.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.console.forms import field_errors
from exports.configs.definition import ExportDefinition
from exports.configs.document import AccountContext, validate_document
from exports.configs.dump import config_entry
from exports.configs.saved import apply_definitions, resolve_stored
from exports.files.produce import Account, PartPreview, preview
from quarry.crypto import SecretBox
from quarry.errors import InvalidRequest
from quarry.settings import Settings
from registry.models import ExportConfig
from registry.principals import Principal
from warehouse.query import StoreInfo
from warehouse.reader import WarehouseReader

SOURCE = "console"
PREVIEW_ROWS = 10


@dataclass
class Checked:
    """An entry after validation: its definition, or the problems by field path."""

    definition: ExportDefinition | None
    errors: list[dict[str, str]] = field(default_factory=list)


def key_context(principal: Principal, settings: Settings) -> AccountContext:
    """The account as the key sees it: only the key's stores can be chosen, and a store
    outside them is refused with the same message as one that does not exist."""
    stores = {s.id: StoreInfo(s.name, s.currency, s.timezone) for s in principal.stores}
    return AccountContext(
        principal.account_id, principal.currency, principal.timezone, stores, settings
    )


def check_entry(
    session: Session,
    settings: Settings,
    principal: Principal,
    entry: dict[str, Any],
    editing: ExportConfig | None,
) -> Checked:
    """Validate one entry for saving as a new configuration (`editing` None) or over
    `editing`. A name another configuration of the account holds is refused: saving would
    overwrite it (apply works by name)."""
    errors: list[dict[str, str]] = []
    name = str(entry.get("name") or "").strip()
    if editing is not None and name != editing.name:
        errors.append({"field": "name", "message": "the name of a saved export is kept"})
    holder = session.scalar(
        select(ExportConfig).where(
            ExportConfig.account_id == principal.account_id, ExportConfig.name == name
        )
    )
    if name and holder is not None and (editing is None or holder.id != editing.id):
        errors.append({"field": "name", "message": f"an export named {name!r} exists already"})
    if errors:
        return Checked(None, errors)
    # A copy: resolve_stored puts stored secrets in place of their references, and the
    # entry may go back to the form, which must still say "keep the stored secret".
    document = {"exports": [copy.deepcopy(entry)]}
    try:
        resolve_stored(session, settings, principal.account_id, document, source=SOURCE)
        (definition,) = validate_document(document, key_context(principal, settings), source=SOURCE)
    except InvalidRequest as invalid:
        problems = invalid.errors or [{"field": "", "message": invalid.detail}]
        return Checked(None, field_errors(problems))
    return Checked(definition)


def preview_rows(
    reader: WarehouseReader, principal: Principal, settings: Settings, definition: ExportDefinition
) -> list[PartPreview]:
    context = key_context(principal, settings)
    account = Account(context.currency, context.timezone, context.stores)
    store_ids = list(definition.stores or context.stores)
    return preview(reader, definition.parts, account, store_ids, PREVIEW_ROWS)


def save(
    session: Session, settings: Settings, principal: Principal, definition: ExportDefinition
) -> str:
    """Creates or updates the configuration; its id."""
    (applied,) = apply_definitions(session, settings, principal.account_id, [definition])
    return applied.id


def entry_for_edit(row: ExportConfig, settings: Settings) -> dict[str, Any]:
    """A saved configuration as the entry `quarry exports dump` writes for it."""
    return config_entry(row, SecretBox(settings.fernet_keys))
