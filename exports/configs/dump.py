"""Configurations back out as the YAML `quarry exports apply` reads (docs/exports.md), so a
dump can be edited and applied again: defaults are left out, and no secret is written.

A credential given as `{env: VARIABLE}` stays that reference. A literal credential is
written as `{stored: true}`: a reference to the value the configuration already holds,
which `apply` keeps (exports.configs.saved.resolve_stored). Applied to an account without
that configuration, the reference is an error, never an empty secret.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from destinations.fields import is_env_reference
from exports.configs.definition import PartSpec
from exports.configs.naming import DEFAULT_TEMPLATE
from exports.configs.options import FormatOptions
from exports.files.formats import options_read
from quarry.crypto import SecretBox
from registry.models import ExportConfig
from warehouse.catalog import dataset

STORED: dict[str, Any] = {"stored": True}


def is_stored_reference(value: Any) -> bool:
    return isinstance(value, Mapping) and dict(value) == STORED


def dump_configs(rows: Iterable[ExportConfig], box: SecretBox) -> str:
    """`{exports: [...]}` of `rows` as YAML text."""
    entries = [config_entry(row, box) for row in rows]
    return yaml.safe_dump(
        {"exports": entries}, sort_keys=False, allow_unicode=True, default_flow_style=False
    )


def config_entry(row: ExportConfig, box: SecretBox) -> dict[str, Any]:
    """One configuration as an entry of the YAML schema."""
    body = row.definition
    parts = [PartSpec.from_json(p) for p in body.get("parts", [])]
    entry: dict[str, Any] = {"name": row.name, "entity_type": row.entity_type}
    if row.entity_type == "bundle":
        entry["format"] = row.format
        entry["parts"] = [{"name": p.name, **_part_keys(p)} for p in parts]
    else:
        entry.update(_part_keys(parts[0]) if parts else {})
        entry["format"] = row.format
    if body.get("stores") is not None:
        entry["stores"] = list(body["stores"])
    options = _changed_options(row.format, body.get("options"))
    if options:
        entry["format_options"] = options
    if body.get("file_name") and body["file_name"] != DEFAULT_TEMPLATE:
        entry["file_name"] = body["file_name"]
    destination = _destination(row, body, box)
    if destination is not None:
        entry["destination"] = destination
    if row.schedule_cron:
        entry["schedule"] = {"cron": row.schedule_cron, "timezone": row.schedule_timezone}
    if row.definition.get("rows") == "changed":
        entry["rows"] = "changed"
    return entry


def _part_keys(part: PartSpec) -> dict[str, Any]:
    if part.entity_type == "query":
        return {"entity_type": "query", "query": part.query}
    keys: dict[str, Any] = {"entity_type": part.entity_type}
    ds = dataset(part.entity_type)
    every = [(f.name, f.title) for f in ds.record_fields] if ds is not None else []
    if [(c.field, c.title) for c in part.columns] != every:
        catalog_titles = dict(every)
        keys["columns"] = [
            c.field
            if catalog_titles.get(c.field) == c.title
            else {"field": c.field, "title": c.title}
            for c in part.columns
        ]
    if part.filters:
        # Stored as the text of query parameters: a one-value filter as its value.
        keys["filters"] = {k: v[0] if len(v) == 1 else list(v) for k, v in part.filters.items()}
    return keys


def _changed_options(file_format: str, stored: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options that differ from the defaults, among those the format reads (a
    configuration applied before unread options were refused may hold others)."""
    defaults = FormatOptions().to_json()
    options = FormatOptions.from_json(dict(stored or {}))
    read = options_read(file_format, options.member_format)
    return {k: v for k, v in options.to_json().items() if v != defaults[k] and k in read}


def _destination(
    row: ExportConfig, body: Mapping[str, Any], box: SecretBox
) -> dict[str, Any] | None:
    settings = dict(body.get("destination", {}).get("settings", {}))
    credentials = box.open(row.credentials_secret) if row.credentials_secret else {}
    if row.destination_kind == "local" and not settings and not credentials:
        return None
    out: dict[str, Any] = {"kind": row.destination_kind}
    if settings:
        out["settings"] = settings
    if credentials:
        out["credentials"] = {
            name: dict(value) if is_env_reference(value) else dict(STORED)
            for name, value in credentials.items()
        }
    return out
