"""The export form, both ways: a configuration entry (the YAML schema of docs/exports.md,
as `quarry exports dump` writes it) shown as form fields, and the submitted fields read
back into such an entry. Validation is not here: the entry goes through the very functions
`quarry exports apply` uses (api.console.export_service), and their problems come back
keyed by the entry's own paths (`filters.financial_status`, `destination.settings.host`),
which the template shows beside the field of that path.

Form field names: `name`, `entity_type` (a record dataset, `query` or `bundle`), `shown`
(the data the fields were drawn for), `stores` (repeated), the data's own fields
(api.console.form_parts: columns, filters or query; a bundle's under `p<i>.`), `new_part`
(the data of a part to add), `format`, `opt.<option>`, `file_name`, `dest.kind`,
`ds.<setting>`, `dc.<credential>.mode` (none, env, secret, stored, kept) with
`dc.<credential>.value`, `kept_secrets` (the handle of secrets typed earlier,
api.console.kept_secrets), `cron`, `timezone`, `rows`, and `action` (refresh, preview,
save, add_part, remove_part.<i>).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from api.console.form_parts import (
    PART_TYPES,
    PartView,
    Posted,
    bundle_parts_of,
    part_of,
    part_view,
    setting_text,
)
from destinations.fields import is_env_reference
from destinations.kinds import KINDS, destination_class
from exports.configs.definition import FORMATS
from exports.configs.dump import STORED, is_stored_reference
from exports.configs.options import DELIMITERS, FormatOptions
from exports.files.formats import MEMBER_FORMATS, options_read
from quarry.settings import Settings
from registry.principals import Principal

# Kinds first offered; the form lists every kind destinations.kinds knows.
DESTINATION_KINDS = tuple(KINDS)
BUNDLE = "bundle"
# What the form's data can be; a bundle's parts are each one of PART_TYPES.
ENTITY_CHOICES = (*PART_TYPES, BUNDLE)
_INTEGER = re.compile(r"^-?[0-9]{1,12}$")


@dataclass
class Credential:
    name: str
    # none, env, secret, stored (the configuration's), kept (typed earlier, kept server-side)
    mode: str
    value: str  # the variable's name for env; never a secret's value


@dataclass
class FormView:
    """Everything the form template shows."""

    entry: dict[str, Any]
    part: PartView | None = None  # a single export's data
    parts: list[PartView] = field(default_factory=list)  # a bundle's
    settings: list[tuple[str, str]] = field(default_factory=list)
    credentials: list[Credential] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    entity_choices: tuple[str, ...] = ENTITY_CHOICES
    part_types: tuple[str, ...] = PART_TYPES
    formats: tuple[str, ...] = FORMATS
    delimiters: tuple[str, ...] = DELIMITERS
    member_formats: tuple[str, ...] = tuple(MEMBER_FORMATS)
    kinds: tuple[str, ...] = DESTINATION_KINDS


def _setting_value(text: str) -> Any:
    """A setting's text as the YAML value a file would hold: whole numbers, true/false and
    `[a, b]` lists are read as such, anything else is text."""
    stripped = text.strip()
    if _INTEGER.match(stripped):
        return int(stripped)
    if stripped in ("true", "false"):
        return stripped == "true"
    if stripped.startswith("["):
        try:
            return yaml.safe_load(stripped)
        except yaml.YAMLError:
            return text
    return text


def view_of(entry: Mapping[str, Any], settings: Settings, kept: Collection[str] = ()) -> FormView:
    """The form for a configuration entry (a new one is `{entity_type, format}`); `kept`
    names the credentials whose typed secret is kept server-side for the form."""
    entry = dict(entry)
    view = FormView(entry=entry)
    if entry.get("entity_type") == BUNDLE:
        raw = entry.get("parts")
        parts = raw if isinstance(raw, list) else []
        view.parts = [part_view(p if isinstance(p, dict) else {}, i) for i, p in enumerate(parts)]
    else:
        view.part = part_view(entry)
    destination = dict(entry.get("destination") or {"kind": "local"})
    kind = destination.get("kind", "local")
    kind = kind if kind in KINDS else "local"
    setting_names, credential_names = destination_class(kind).field_names(settings)
    given = dict(destination.get("settings") or {})
    view.settings = [(n, setting_text(given[n]) if n in given else "") for n in setting_names]
    stored = dict(destination.get("credentials") or {})
    for name in credential_names:
        value: Any = stored.get(name)
        if is_env_reference(value):
            view.credentials.append(Credential(name, "env", str(value["env"])))
        elif is_stored_reference(value):
            view.credentials.append(Credential(name, "stored", ""))
        elif value and name in kept:
            view.credentials.append(Credential(name, "kept", ""))
        elif value:
            view.credentials.append(Credential(name, "secret", ""))
        else:
            view.credentials.append(Credential(name, "none", ""))
    view.options = FormatOptions.from_json(dict(entry.get("format_options") or {})).to_json()
    return view


def posted_of(form: Sequence[tuple[str, Any]]) -> Posted:
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for key, value in form:
        if not isinstance(value, str):
            continue  # no file fields here
        single.setdefault(key, value)
        multi.setdefault(key, []).append(value)
    return Posted(single, multi)


def change_parts(entry: dict[str, Any], form: Sequence[tuple[str, Any]]) -> bool:
    """Add or remove a bundle's part as the form's `action` asks (`add_part`, with the
    data `new_part`; `remove_part.<i>`); whether it asked. A bundle may be left without
    parts: validation then says what the model requires."""
    single = posted_of(form).single
    action = single.get("action", "")
    parts = entry.get("parts")
    if entry.get("entity_type") != BUNDLE or not isinstance(parts, list):
        return False
    if action == "add_part":
        new = single.get("new_part", "orders")
        parts.append({"entity_type": new if new in PART_TYPES else "orders"})
        return True
    if action.startswith("remove_part."):
        index = action.removeprefix("remove_part.")
        if index.isdigit() and int(index) < len(parts):
            del parts[int(index)]
        return True
    return False


def entry_of(
    form: Sequence[tuple[str, Any]],
    principal: Principal,
    settings: Settings,
    kept: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The configuration entry the submitted form describes (not yet validated); `kept`:
    the secrets typed earlier that the server keeps for this form, by credential."""
    posted = posted_of(form)
    single = posted.single
    entity_type = single.get("entity_type", "orders")
    entry: dict[str, Any] = {"name": single.get("name", "").strip(), "entity_type": entity_type}
    # The data the posted fields were drawn for: switching a single export to a bundle
    # makes its data the bundle's first part.
    shown = single.get("shown")
    if entity_type == BUNDLE:
        if shown is None or shown == BUNDLE:
            entry["parts"] = bundle_parts_of(posted)
        else:
            first = {"entity_type": shown} | part_of(posted, shown) if shown in PART_TYPES else {}
            entry["parts"] = [first] if first else []
    else:
        entry.update(part_of(posted, entity_type))
    entry["format"] = single.get("format", "csv")
    if entity_type == BUNDLE and shown not in (None, BUNDLE):
        entry["format"] = "zip"  # the format a bundle takes, when it has just been chosen
    stores = posted.multi.get("stores", [])
    if stores:
        entry["stores"] = stores
    elif set(principal.store_ids) != set(principal.account_store_ids):
        # A key limited to some stores makes configurations of those stores: "every store"
        # of the account would be one it cannot see.
        entry["stores"] = list(principal.store_ids)
    member_format = single.get("opt.member_format", "csv")
    posted_options = {
        "delimiter": single.get("opt.delimiter", ","),
        "bom": single.get("opt.bom") == "true",
        "date_format": single.get("opt.date_format", ""),
        "time_zone": single.get("opt.time_zone", "").strip(),
        "member_format": member_format,
    }
    # The form shows every option; the chosen format takes those its writer reads.
    read = (
        options_read(entry["format"], member_format)
        if entry["format"] in FORMATS
        else tuple(posted_options)
    )
    entry["format_options"] = {k: v for k, v in posted_options.items() if k in read}
    if single.get("file_name", "").strip():
        entry["file_name"] = single["file_name"].strip()
    entry["destination"] = _destination(single, settings, kept or {})
    cron = single.get("cron", "").strip()
    if cron:
        entry["schedule"] = {
            "cron": cron,
            "timezone": single.get("timezone", "").strip() or principal.timezone,
        }
    if single.get("rows", "all") != "all":
        entry["rows"] = single["rows"]
    return entry


def _destination(
    single: Mapping[str, str], settings: Settings, kept: Mapping[str, str]
) -> dict[str, Any]:
    kind = single.get("dest.kind", "local")
    out: dict[str, Any] = {"kind": kind}
    if kind not in KINDS:
        return out  # validation names the kind
    setting_names, credential_names = destination_class(kind).field_names(settings)
    given = {
        name: _setting_value(single[f"ds.{name}"])
        for name in setting_names
        if single.get(f"ds.{name}", "").strip()
    }
    if given:
        out["settings"] = given
    credentials: dict[str, Any] = {}
    for name in credential_names:
        mode = single.get(f"dc.{name}.mode", "none")
        value = single.get(f"dc.{name}.value", "")
        if mode == "env" and value.strip():
            credentials[name] = {"env": value.strip()}
        elif mode in ("secret", "kept") and value:
            credentials[name] = value  # typed (over a kept one: it replaces it)
        elif mode == "kept" and name in kept:
            credentials[name] = kept[name]
        elif mode == "stored":
            credentials[name] = dict(STORED)
    if credentials:
        out["credentials"] = credentials
    return out


def typed_secrets(entry: Mapping[str, Any]) -> dict[str, str]:
    """The literal secrets of an entry read from the form (typed now or kept from before):
    what must be kept if the form comes back. Env and stored references are not secrets."""
    destination = entry.get("destination") or {}
    credentials = destination.get("credentials") or {}
    return {name: value for name, value in credentials.items() if isinstance(value, str)}


def missing_kept(form: Sequence[tuple[str, Any]], kept: Mapping[str, str]) -> list[dict[str, str]]:
    """A problem for each credential the form says to keep whose secret the server no
    longer holds (kept too long, signed out since): it must be typed again."""
    values: dict[str, str] = {}
    for key, value in form:
        if isinstance(value, str):
            values.setdefault(key, value)  # the first, as entry_of reads it
    problems = []
    for key, mode in values.items():
        match = re.fullmatch(r"dc\.(.+)\.mode", key)
        if not match or mode != "kept":
            continue
        name = match[1]
        if not values.get(f"dc.{name}.value") and name not in kept:
            problems.append(
                {
                    "field": f"destination.credentials.{name}",
                    "message": "the secret entered earlier is no longer kept (it is kept "
                    "for a short time and until you sign out): type it again",
                }
            )
    return problems


def field_errors(errors: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Problems of a one-entry document, keyed by the entry's own paths (`exports[0].`
    taken off)."""
    out = []
    for item in errors:
        key = str(item.get("field", ""))
        key = re.sub(r"^exports\[0\]\.?", "", key)
        out.append({"field": key, "message": str(item.get("message", ""))})
    return out
