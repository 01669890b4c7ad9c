"""The export form, both ways: a configuration entry (the YAML schema of docs/exports.md,
as `quarry exports dump` writes it) shown as form fields, and the submitted fields read
back into such an entry. Validation is not here: the entry goes through the very functions
`quarry exports apply` uses (api.console.export_service), and their problems come back
keyed by the entry's own paths (`filters.financial_status`, `destination.settings.host`),
which the template shows beside the field of that path.

Form field names: `name`, `entity_type`, `stores` (repeated), `col` (repeated, in order)
with `title.<field>`, `fv.<field>` (repeated: allowed values of a filter), `created_at_min`,
`created_at_max`, `of.<n>.name`/`of.<n>.value` (any other filter), `format`,
`opt.<option>`, `file_name`, `dest.kind`, `ds.<setting>`, `dc.<credential>.mode`
(none, env, secret, stored, kept) with `dc.<credential>.value`, `kept_secrets` (the handle
of secrets typed earlier, api.console.kept_secrets), `cron`, `timezone`, `rows`, `query`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from destinations.fields import is_env_reference
from destinations.kinds import KINDS, destination_class
from exports.configs.definition import FORMATS, RECORD_TYPES
from exports.configs.dump import STORED, is_stored_reference
from exports.configs.options import DELIMITERS, FormatOptions
from exports.files.formats import MEMBER_FORMATS
from quarry.settings import Settings
from registry.principals import Principal
from warehouse.catalog import dataset

# Kinds first offered; the form lists every kind destinations.kinds knows.
DESTINATION_KINDS = tuple(KINDS)
ENTITY_CHOICES = (*RECORD_TYPES, "query")
EXTRA_FILTER_ROWS = 2
SCALAR_FILTERS = ("created_at_min", "created_at_max")
_INTEGER = re.compile(r"^-?[0-9]{1,12}$")


@dataclass
class ColumnChoice:
    field: str
    catalog_title: str
    title: str
    checked: bool


@dataclass
class ValueFilter:
    """A filter on a field with a known set of values: one checkbox per value."""

    field: str
    title: str
    values: tuple[str, ...]
    chosen: tuple[str, ...]


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
    columns: list[ColumnChoice] = field(default_factory=list)
    value_filters: list[ValueFilter] = field(default_factory=list)
    other_filters: list[tuple[str, str]] = field(default_factory=list)
    filter_names: list[str] = field(default_factory=list)
    settings: list[tuple[str, str]] = field(default_factory=list)
    credentials: list[Credential] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    entity_choices: tuple[str, ...] = ENTITY_CHOICES
    formats: tuple[str, ...] = FORMATS
    delimiters: tuple[str, ...] = DELIMITERS
    member_formats: tuple[str, ...] = tuple(MEMBER_FORMATS)
    kinds: tuple[str, ...] = DESTINATION_KINDS


def _setting_text(value: Any) -> str:
    if value is None:  # an optional setting left unset (stored normalised as null)
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return yaml.safe_dump(value, default_flow_style=True).strip()


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
    entity_type = entry.get("entity_type")
    ds = dataset(entity_type) if entity_type in RECORD_TYPES else None
    if ds is not None:
        view.columns = _columns(ds, entry.get("columns"))
        filters = dict(entry.get("filters") or {})
        for item in ds.record_fields:
            if item.values is None:
                continue
            raw = filters.get(item.name)
            chosen = [] if raw is None else (raw if isinstance(raw, list) else [raw])
            texts = [str(v) for v in chosen]
            # Checkboxes only when they say exactly what is stored (each an allowed
            # value, in the catalog's order); anything else stays an editable row.
            if set(texts) <= set(item.values) and texts == [v for v in item.values if v in texts]:
                filters.pop(item.name, None)
                view.value_filters.append(
                    ValueFilter(item.name, item.title, item.values, tuple(texts))
                )
        for name, raw in filters.items():
            values = raw if isinstance(raw, list) else [raw]
            view.other_filters += [(str(name), _setting_text(v)) for v in values]
        view.other_filters += [("", "")] * EXTRA_FILTER_ROWS
        view.filter_names = [f.name for f in ds.record_fields] + list(SCALAR_FILTERS)
    destination = dict(entry.get("destination") or {"kind": "local"})
    kind = destination.get("kind", "local")
    kind = kind if kind in KINDS else "local"
    setting_names, credential_names = destination_class(kind).field_names(settings)
    given = dict(destination.get("settings") or {})
    view.settings = [(n, _setting_text(given[n]) if n in given else "") for n in setting_names]
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


def _columns(ds: Any, raw: Any) -> list[ColumnChoice]:
    titles = {f.name: f.title for f in ds.record_fields}
    chosen: list[ColumnChoice] = []
    if isinstance(raw, list):
        for item in raw:
            name = item.get("field") if isinstance(item, dict) else item
            title = item.get("title") if isinstance(item, dict) else None
            if isinstance(name, str) and name in titles and all(c.field != name for c in chosen):
                chosen.append(ColumnChoice(name, titles[name], title or titles[name], True))
    everything = raw is None
    rest = [
        ColumnChoice(f.name, f.title, f.title, everything)
        for f in ds.record_fields
        if all(c.field != f.name for c in chosen)
    ]
    return chosen + rest


def entry_of(
    form: Sequence[tuple[str, Any]],
    principal: Principal,
    settings: Settings,
    kept: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The configuration entry the submitted form describes (not yet validated); `kept`:
    the secrets typed earlier that the server keeps for this form, by credential."""
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for key, value in form:
        if not isinstance(value, str):
            continue  # no file fields here
        single.setdefault(key, value)
        multi.setdefault(key, []).append(value)
    entity_type = single.get("entity_type", "orders")
    entry: dict[str, Any] = {"name": single.get("name", "").strip(), "entity_type": entity_type}
    ds = dataset(entity_type) if entity_type in RECORD_TYPES else None
    if ds is not None:
        columns: list[Any] = []
        for name in multi.get("col", []):
            found = ds.field(name)
            title = single.get(f"title.{name}", "").strip()
            if found is not None and title and title != found.title:
                columns.append({"field": name, "title": title})
            else:
                columns.append(name)
        entry["columns"] = columns
        filters: dict[str, Any] = {}
        for item in ds.record_fields:
            chosen = multi.get(f"fv.{item.name}")
            if chosen:
                filters[item.name] = chosen
        for bound in SCALAR_FILTERS:
            if single.get(bound, "").strip():
                filters[bound] = single[bound].strip()
        rows = sorted(
            {int(k.split(".")[1]) for k in single if re.fullmatch(r"of\.[0-9]{1,3}\.name", k)}
        )
        for index in rows:
            name = single.get(f"of.{index}.name", "").strip()
            value = single.get(f"of.{index}.value", "")
            if name:
                filters.setdefault(name, []).append(value)
        if filters:
            entry["filters"] = {
                k: v[0] if isinstance(v, list) and len(v) == 1 else v for k, v in filters.items()
            }
    elif entity_type == "query":
        entry["query"] = single.get("query", "")
    entry["format"] = single.get("format", "csv")
    stores = multi.get("stores", [])
    if stores:
        entry["stores"] = stores
    elif set(principal.store_ids) != set(principal.account_store_ids):
        # A key limited to some stores makes configurations of those stores: "every store"
        # of the account would be one it cannot see.
        entry["stores"] = list(principal.store_ids)
    entry["format_options"] = {
        "delimiter": single.get("opt.delimiter", ","),
        "bom": single.get("opt.bom") == "true",
        "date_format": single.get("opt.date_format", ""),
        "time_zone": single.get("opt.time_zone", "").strip(),
        "member_format": single.get("opt.member_format", "csv"),
    }
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
