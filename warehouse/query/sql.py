"""A SQL fragment with its bound parameters, so user values never enter the SQL text."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


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

    @staticmethod
    def param(value: Any) -> Sql:
        return Sql("?", (value,))

    @staticmethod
    def join(sep: str, parts: Iterable[Sql | str]) -> Sql:
        out = Sql("")
        for k, part in enumerate(parts):
            out = (out + sep + part) if k else (out + part)
        return out
