"""Bulk operation results: JSONL lines back into parents with their children.

A bulk query's file has one JSON object per line: each parent, and each node of a nested
connection as its own line with `__parentId` naming its parent. Lines are not guaranteed to
follow their parent (without `groupObjects` they usually do not), so the whole file of a
window is read before children are attached. Which connection a child belongs to is told
by the type in its gid (gid://shopify/LineItem/1 -> lineItems).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from platforms.shopify.queries import DatasetQueries


def gid_type(gid: str) -> str:
    """`LineItem` for gid://shopify/LineItem/1."""
    parts = gid.split("/")
    return parts[3] if len(parts) > 4 else ""


def gid_number(gid: str) -> int:
    """The numeric id at the end of a gid (ordering and `id:>` search filters)."""
    return int(gid.rsplit("/", 1)[-1].split("?", 1)[0])


def reassemble(lines: Iterable[str], queries: DatasetQueries) -> list[dict[str, Any]]:
    """Parents of `queries`' dataset, ordered by numeric id, each with every child
    connection as a list. Children whose parent is not in the file (possible in partial
    data) are dropped."""
    by_type = {c.type_name: c.field for c in queries.children}
    parents: dict[str, dict[str, Any]] = {}
    children: list[dict[str, Any]] = []
    for line in lines:
        obj = json.loads(line)
        if "__parentId" in obj:
            children.append(obj)
            continue
        for child in queries.children:
            obj[child.field] = []
        parents[obj["id"]] = obj
    for line_object in children:
        parent = parents.get(line_object.pop("__parentId"))
        field = by_type.get(gid_type(str(line_object.get("id", ""))))
        if parent is not None and field is not None:
            parent[field].append(line_object)
    return sorted(parents.values(), key=lambda p: gid_number(p["id"]))
