"""Shared by the writers that COPY a record part with DuckDB (Parquet, JSON Lines): the
DuckDB types of a part's columns and safe, unique column names."""

from __future__ import annotations

from collections.abc import Sequence

from exports.files.tables import SqlPart


def column_types(part: SqlPart) -> list[str]:
    """The DuckDB type name of each of the part's columns (a LIMIT 0 probe)."""
    source = part.source
    probe = part.cursor.sql(f"SELECT {', '.join(source.columns)} {source.from_where} LIMIT 0")
    return [str(t) for t in probe.types]


def unique_names(names: Sequence[str]) -> list[str]:
    """`names` with repeats numbered (`Total`, `Total_2`): a Parquet schema and a JSON
    object need distinct names, and two columns may be given the same title."""
    seen: set[str] = set()
    unique = []
    for name in names:
        candidate, number = name, 1
        while candidate.lower() in seen:
            number += 1
            candidate = f"{name}_{number}"
        seen.add(candidate.lower())
        unique.append(candidate)
    return unique


def identifier(name: str) -> str:
    """`name` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'
