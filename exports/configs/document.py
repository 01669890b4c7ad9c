"""The YAML schema of export configurations (docs/exports.md): reading a file and
validating every entry into an ExportDefinition. Nothing is written here (exports.configs.saved
applies them); every problem is collected and reported with the file, key and problem."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from exports.configs.definition import (
    ENTITY_TYPES,
    FORMATS,
    RECORD_TYPES,
    ROWS,
    SCHEDULE_ONLY_KINDS,
    ColumnSpec,
    ExportDefinition,
    PartSpec,
)
from exports.configs.naming import DEFAULT_TEMPLATE, template_errors
from exports.configs.parts import part_spec
from exports.configs.problems import Problems
from exports.configs.sections import destination, format_options, schedule
from quarry.errors import InvalidRequest
from quarry.settings import Settings
from warehouse.catalog import dataset
from warehouse.query import StoreInfo

EXPORT_KEYS = (
    "name", "entity_type", "columns", "filters", "query", "parts", "stores", "format",
    "format_options", "file_name", "destination", "schedule", "rows",
)  # fmt: skip
PART_KEYS = ("name", "entity_type", "columns", "filters", "query")
MAX_NAME = 200
# A file is read whole and becomes Python objects about a hundred times its size: 1 MiB
# (a few thousand configurations) keeps `apply` near 100 MB; an 11 MB file took 1.28 GB.
MAX_FILE_BYTES = 1024 * 1024
# A configuration nests about six levels (exports, entry, destination, options, ...);
# deeper is a mistake or an attack, and PyYAML recurses per level until RecursionError.
MAX_DEPTH = 32


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader refusing nesting deeper than MAX_DEPTH, before it recurses that far."""

    depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.depth >= MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark
            )
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


@dataclass(frozen=True)
class AccountContext:
    """What entries are checked against: the account's zone and currency, its stores."""

    account_id: str
    currency: str
    timezone: str
    stores: dict[str, StoreInfo]
    settings: Settings


def load_file(path: Path, context: AccountContext) -> list[ExportDefinition]:
    """Every configuration of a YAML file, or InvalidRequest naming file, key and problem."""
    return validate_document(read_document(path), context, source=str(path))


def read_document(path: Path) -> Any:
    """The YAML of a file, or InvalidRequest naming the file and where it is not YAML."""
    try:
        # At most one byte past the cap: a device or pipe has no size to check first.
        with path.open("rb") as file:
            raw = file.read(MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES:
            raise InvalidRequest(
                f"{path}: larger than {MAX_FILE_BYTES:,} bytes; split the configurations "
                "into several files"
            )
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"{path}: cannot read the file ({exc})") from exc
    try:
        document = yaml.load(text, Loader=_BoundedLoader)  # a SafeLoader: no Python objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InvalidRequest(f"{path}: {where}not valid YAML ({problem})") from exc
    return document


def validate_document(
    document: Any, context: AccountContext, *, source: str = "<configuration>"
) -> list[ExportDefinition]:
    """`{exports: [...]}` (or a bare list) as definitions; names must be unique."""
    problems = Problems(source)
    entries = document.get("exports") if isinstance(document, dict) else document
    if isinstance(document, dict):
        problems.unknown_keys("", document, ("exports",))
    if not isinstance(entries, list) or not entries:
        problems.add("exports", "must be a non-empty list of export configurations")
        raise problems.error()
    definitions: list[ExportDefinition] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        key = f"exports[{index}]"
        if not isinstance(entry, dict):
            problems.add(key, "must be a mapping")
            continue
        name = entry.get("name")
        if isinstance(name, str) and name.strip() in seen:
            problems.add(f"{key}.name", f"{name.strip()!r} appears twice in the file")
        seen.add(str(name).strip())
        definition = _entry(entry, key, context, problems)
        if definition is not None:
            definitions.append(definition)
    problems.raise_if_any()
    return definitions


def _text(entry: dict[str, Any], name: str, key: str, problems: Problems) -> str | None:
    value = entry.get(name)
    if not isinstance(value, str) or not value.strip():
        problems.add(f"{key}.{name}", "is required (text)")
        return None
    return value.strip()


def _entry(
    entry: dict[str, Any], key: str, context: AccountContext, problems: Problems
) -> ExportDefinition | None:
    before = len(problems.errors)
    problems.unknown_keys(key, entry, EXPORT_KEYS)
    name = _text(entry, "name", key, problems)
    if name and len(name) > MAX_NAME:
        problems.add(f"{key}.name", f"must be at most {MAX_NAME} characters")
    entity_type = _text(entry, "entity_type", key, problems)
    if entity_type and entity_type not in ENTITY_TYPES:
        problems.add(f"{key}.entity_type", "must be one of " + ", ".join(ENTITY_TYPES))
        entity_type = None
    file_format = entry.get("format")
    if file_format not in FORMATS:
        problems.add(f"{key}.format", "must be one of " + ", ".join(FORMATS))
    elif entity_type == "bundle" and file_format != "zip":
        problems.add(f"{key}.format", "a bundle holds several files: it must be zip")
    stores = _stores(entry.get("stores"), f"{key}.stores", context, problems)
    readable = {s: context.stores[s] for s in (stores or context.stores) if s in context.stores}
    query_context = {
        "stores": readable, "currency": context.currency, "timezone": context.timezone,
    }  # fmt: skip
    parts: tuple[PartSpec, ...] = ()
    if entity_type == "bundle":
        parts = _bundle_parts(entry, key, problems, query_context)
    elif entity_type is not None:
        ds = dataset(entity_type) if entity_type in RECORD_TYPES else None
        if entry.get("parts") is not None:
            problems.add(f"{key}.parts", "only for entity_type bundle")
        parts = (part_spec(ds, entity_type, entity_type, entry, key, problems, **query_context),)
    options = format_options(
        entry.get("format_options"),
        f"{key}.format_options",
        problems,
        file_format if isinstance(file_format, str) else None,
    )
    template = entry.get("file_name", DEFAULT_TEMPLATE)
    for message in template_errors(template):
        problems.add(f"{key}.file_name", message)
    kind, settings, credentials = destination(
        entry.get("destination"), key, context.settings, problems
    )
    cron, zone = schedule(entry.get("schedule"), f"{key}.schedule", context.timezone, problems)
    rows = entry.get("rows", "all")
    if rows not in ROWS:
        problems.add(f"{key}.rows", "must be all or changed")
        rows = "all"
    elif rows == "changed":
        parts = _changed_rows_parts(parts, key, problems)
        if kind in SCHEDULE_ONLY_KINDS:
            problems.add(f"{key}.rows", f"a {kind} export replaces its sheet: it takes rows: all")
    definition = ExportDefinition(
        name=name or "",
        entity_type=entity_type or "",
        format=str(file_format),
        parts=parts,
        stores=stores,
        options=options,
        file_name=template if isinstance(template, str) else "",
        destination_kind=kind,
        destination_settings=settings,
        credentials=credentials,
        schedule_cron=cron,
        schedule_timezone=zone,
        rows=str(rows),
    )
    if not definition.runnable_via_api:
        if cron is None:
            problems.add(f"{key}.schedule", f"is required: a {kind} export runs only on it")
        if file_format != "csv" or entity_type == "bundle":
            problems.add(f"{key}.format", f"a {kind} export takes one table as csv")
    return definition if len(problems.errors) == before else None


def _changed_rows_parts(
    parts: tuple[PartSpec, ...], key: str, problems: Problems
) -> tuple[PartSpec, ...]:
    """The parts of a `rows: changed` configuration: record parts only (a query's rows
    have no identity to compare), each with `id` among its columns (prepended when the
    configuration left it out): a deleted row is known by its id."""
    checked = []
    for part in parts:
        if part.entity_type == "query":
            where = f"{key}.rows"
            problems.add(where, f"rows: changed needs record data; part {part.name!r} is a query")
            continue
        if all(c.field != "id" for c in part.columns):
            ds = dataset(part.entity_type)
            found = ds.field("id") if ds is not None else None
            title = found.title if found is not None else "ID"
            part = replace(part, columns=(ColumnSpec("id", title), *part.columns))
        checked.append(part)
    return tuple(checked)


def _stores(
    raw: Any, key: str, context: AccountContext, problems: Problems
) -> tuple[str, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw or not all(isinstance(s, str) for s in raw):
        problems.add(key, "must be a non-empty list of store ids (omit it for every store)")
        return None
    for index, store_id in enumerate(raw):
        if store_id not in context.stores:
            problems.add(f"{key}[{index}]", f"{store_id!r} is not a store of the account")
    return tuple(dict.fromkeys(raw))


def _bundle_parts(
    entry: dict[str, Any], key: str, problems: Problems, query_context: dict[str, Any]
) -> tuple[PartSpec, ...]:
    for single in ("columns", "filters", "query"):
        if entry.get(single) is not None:
            problems.add(f"{key}.{single}", "a bundle sets this on each of its parts")
    raw = entry.get("parts")
    if not isinstance(raw, list) or not raw:
        problems.add(f"{key}.parts", "is required for a bundle: a non-empty list of parts")
        return ()
    parts: list[PartSpec] = []
    for index, item in enumerate(raw):
        where = f"{key}.parts[{index}]"
        if not isinstance(item, dict):
            problems.add(where, "must be a mapping")
            continue
        problems.unknown_keys(where, item, PART_KEYS)
        entity_type = item.get("entity_type")
        if entity_type not in (*RECORD_TYPES, "query"):
            problems.add(f"{where}.entity_type", "must be one of " + ", ".join(RECORD_TYPES)
                         + ", query")  # fmt: skip
            continue
        name = item.get("name", entity_type)
        if not isinstance(name, str) or not name.strip():
            problems.add(f"{where}.name", "must be non-empty text")
            continue
        if any(p.name == name for p in parts):
            problems.add(f"{where}.name", f"{name!r} names two parts")
        ds = dataset(entity_type) if entity_type in RECORD_TYPES else None
        parts.append(part_spec(ds, name, entity_type, item, where, problems, **query_context))
    return tuple(parts)
