"""Positioned diagnostics: what the lexer, parser and checker report, and how they become
the `errors` of an InvalidQuery (contract, Errors: {line, column, message, severity})."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from quarry.errors import InvalidQuery


@dataclass(frozen=True, order=True)
class Pos:
    """1-based line and column of a token's first character."""

    line: int
    column: int


START = Pos(1, 1)
# An answer lists this many errors at most, and cuts a message past MAX_MESSAGE characters
# (one quoting a long token): a 100,000-character query once gave 99,981 errors, 8 MB.
MAX_LISTED = 50
MAX_MESSAGE = 300


@dataclass(frozen=True)
class Diagnostic:
    pos: Pos
    message: str
    severity: str = "error"

    def public(self) -> dict[str, object]:
        message = self.message
        if len(message) > MAX_MESSAGE:
            message = message[: MAX_MESSAGE - 3] + "..."
        return {
            "line": self.pos.line,
            "column": self.pos.column,
            "message": message,
            "severity": self.severity,
        }


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """' Did you mean X?' for the closest candidate, or ''. Case-insensitive, because users
    type keywords and names in any case."""
    pool = {c.lower(): c for c in sorted(candidates)}
    match = difflib.get_close_matches(word.lower(), list(pool), n=1, cutoff=0.6)
    return f" Did you mean '{pool[match[0]]}'?" if match else ""


def invalid_query(diagnostics: list[Diagnostic]) -> InvalidQuery:
    """One InvalidQuery carrying every diagnostic, in reading order, without duplicates."""
    seen: set[tuple[Pos, str]] = set()
    ordered: list[Diagnostic] = []
    for d in sorted(diagnostics, key=lambda d: d.pos):
        if (d.pos, d.message) not in seen:
            seen.add((d.pos, d.message))
            ordered.append(d)
    first = ordered[0].public()["message"] if ordered else "The query has errors."
    detail = str(first)
    if len(ordered) > MAX_LISTED:
        total = len(ordered)
        detail += f" (and {total - 1:,} more: {total:,} errors, the first {MAX_LISTED} listed)"
    elif len(ordered) > 1:
        detail += f" (and {len(ordered) - 1} more)"
    return InvalidQuery(detail=detail, errors=[d.public() for d in ordered[:MAX_LISTED]])
