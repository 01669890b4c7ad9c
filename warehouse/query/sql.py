"""A SQL fragment with its bound parameters, so user values never enter the SQL text."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from warehouse.sql_values import bind


@dataclass(frozen=True)
class Sql:
    text: str
    params: tuple[Any, ...] = field(default_factory=tuple)

    def __add__(self, other: Sql | str) -> Sql:
        if isinstance(other, str):
            return Sql(self.text + other, self.params)
        return Sql(self.text + other.text, self.params + other.params)

    def __radd__(self, other: str) -> Sql:
        return Sql(other + self.text, self.params)

    def inline(self) -> str:
        """The text with its values written in as literals (warehouse.sql_values)."""
        return bind(self.text, self.params)

    @staticmethod
    def param(value: Any) -> Sql:
        return Sql("?", (value,))

    @staticmethod
    def join(sep: str, parts: Iterable[Sql | str]) -> Sql:
        out = Sql("")
        for k, part in enumerate(parts):
            out = (out + sep + part) if k else (out + part)
        return out


def pushdown_safe(column_sql: str, *values: object) -> str:
    """`column_sql` as the side of a comparison with `values`: an expression of it that
    DuckDB does not push into DuckLake's file pruning when a value is text holding a NUL
    byte. DuckLake 1.5.5 writes such a constant into its catalog query unescaped, and the
    query fails ("Failed to get data file list from DuckLake: syntax error"); other values
    keep the pruning."""
    if any(isinstance(v, str) and "\x00" in v for v in values):
        return f"({column_sql} || '')"
    return column_sql
