"""The data part of the export form, both ways: one part's dataset, columns and filters
(or query) shown as form fields and read back into the keys of a configuration entry.

A single export has one part whose fields carry no prefix (`col`, `title.<field>`,
`fv.<field>`, `created_at_min`, `created_at_max`, `of.<n>.name`/`of.<n>.value`, `query`);
part `i` of a bundle carries the same fields under `p<i>.` (`p0.col`, `p0.fv.<field>`),
with `p<i>.entity_type` and `p<i>.name` (the part's file name inside the zip). Each part,
and the single export, also posts the dataset its fields were drawn for (`shown` and
`p<i>.shown`): when the dataset was changed, the fields drawn for the old one are not
read, and the part starts over with every column of the new one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from exports.configs.definition import RECORD_TYPES
from warehouse.catalog import Dataset, dataset

# What a part (or a single export) can hold: a record dataset or a query.
PART_TYPES = (*RECORD_TYPES, "query")
EXTRA_FILTER_ROWS = 2
SCALAR_FILTERS = ("created_at_min", "created_at_max")
_PART_FIELD = re.compile(r"^p([0-9]{1,3})\.entity_type$")


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
class PartView:
    """One part's fields as the template shows them. `names` prefixes the form field
    names, `ids` the element ids, `key` the entry's path in problems (`parts[1].`)."""

    entry: dict[str, Any]
    names: str = ""
    ids: str = ""
    key: str = ""
    number: int = 0  # 1-based, for a bundle's part; 0 for a single export
    columns: list[ColumnChoice] = field(default_factory=list)
    value_filters: list[ValueFilter] = field(default_factory=list)
    other_filters: list[tuple[str, str]] = field(default_factory=list)
    filter_names: list[str] = field(default_factory=list)

    @property
    def entity_type(self) -> Any:
        return self.entry.get("entity_type")

    def scalar_filter(self, name: str) -> str:
        value = (self.entry.get("filters") or {}).get(name)
        return value if isinstance(value, str) else ""


def setting_text(value: Any) -> str:
    """A YAML value as the text of a form field."""
    if value is None:  # an optional setting left unset (stored normalised as null)
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return yaml.safe_dump(value, default_flow_style=True).strip()


def part_view(part: Mapping[str, Any], index: int | None = None) -> PartView:
    """The fields of a part entry (an export's own keys, or an entry of `parts`); `index`
    None for a single export, the 0-based place of a bundle's part otherwise."""
    view = PartView(entry=dict(part))
    if index is not None:
        view.names, view.ids = f"p{index}.", f"p{index}-"
        view.key, view.number = f"parts[{index}].", index + 1
    entity_type = part.get("entity_type")
    ds = dataset(entity_type) if entity_type in RECORD_TYPES else None
    if ds is None:
        return view
    view.columns = _columns(ds, part.get("columns"))
    filters = dict(part.get("filters") or {})
    for item in ds.record_fields:
        if item.values is None:
            continue
        raw = filters.get(item.name)
        chosen = [] if raw is None else (raw if isinstance(raw, list) else [raw])
        texts = [str(v) for v in chosen]
        # Checkboxes only when they say exactly what is stored (each an allowed value, in
        # the catalog's order); anything else stays an editable row.
        if set(texts) <= set(item.values) and texts == [v for v in item.values if v in texts]:
            filters.pop(item.name, None)
            view.value_filters.append(ValueFilter(item.name, item.title, item.values, tuple(texts)))
    for name, raw in filters.items():
        values = raw if isinstance(raw, list) else [raw]
        view.other_filters += [(str(name), setting_text(v)) for v in values]
    view.other_filters += [("", "")] * EXTRA_FILTER_ROWS
    view.filter_names = [f.name for f in ds.record_fields] + list(SCALAR_FILTERS)
    return view


def _columns(ds: Dataset, raw: Any) -> list[ColumnChoice]:
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


@dataclass
class Posted:
    """A submitted form: each field's first value, and every value of repeated ones."""

    single: dict[str, str]
    multi: dict[str, list[str]]


def part_of(posted: Posted, entity_type: str, names: str = "") -> dict[str, Any]:
    """The columns and filters (or query) of the part whose fields are named `names...`,
    for `entity_type`; nothing (every column) when the fields were drawn for another
    dataset."""
    single, multi = posted.single, posted.multi
    shown = single.get(f"{names}shown")
    if shown is not None and shown != entity_type:
        return {}
    if entity_type == "query":
        return {"query": single.get(f"{names}query", "")}
    ds = dataset(entity_type) if entity_type in RECORD_TYPES else None
    if ds is None:
        return {}  # validation names the entity type
    out: dict[str, Any] = {}
    columns: list[Any] = []
    for name in multi.get(f"{names}col", []):
        found = ds.field(name)
        title = single.get(f"{names}title.{name}", "").strip()
        if found is not None and title and title != found.title:
            columns.append({"field": name, "title": title})
        else:
            columns.append(name)
    out["columns"] = columns
    filters: dict[str, Any] = {}
    for item in ds.record_fields:
        chosen = multi.get(f"{names}fv.{item.name}")
        if chosen:
            filters[item.name] = chosen
    for bound in SCALAR_FILTERS:
        if single.get(f"{names}{bound}", "").strip():
            filters[bound] = single[f"{names}{bound}"].strip()
    row_name = re.compile(rf"^{re.escape(names)}of\.([0-9]{{1,3}})\.name$")
    rows = sorted({int(m[1]) for k in single if (m := row_name.match(k))})
    for index in rows:
        name = single.get(f"{names}of.{index}.name", "").strip()
        value = single.get(f"{names}of.{index}.value", "")
        if name:
            filters.setdefault(name, []).append(value)
    if filters:
        out["filters"] = {
            k: v[0] if isinstance(v, list) and len(v) == 1 else v for k, v in filters.items()
        }
    return out


def bundle_parts_of(posted: Posted) -> list[dict[str, Any]]:
    """A bundle's parts as posted (`p<i>.` fields, in the order of `i`). A part's name
    left empty is left out: the model names the part after its dataset."""
    indexes = sorted({int(m[1]) for k in posted.single if (m := _PART_FIELD.match(k))})
    parts = []
    for index in indexes:
        names = f"p{index}."
        entity_type = posted.single[f"{names}entity_type"]
        part: dict[str, Any] = {}
        name = posted.single.get(f"{names}name", "").strip()
        if name:
            part["name"] = name
        part["entity_type"] = entity_type
        parts.append(part | part_of(posted, entity_type, names))
    return parts
