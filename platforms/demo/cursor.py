"""The demo connector's cursor: where in the (updated_at, id) order a sync got to, and up to
which deletion time it has seen deletions. Opaque to everyone else."""

from __future__ import annotations

import json
from dataclasses import dataclass

from quarry.errors import InvalidRequest

VERSION = 1


@dataclass(frozen=True)
class Position:
    # Microseconds since the epoch and id of the last record delivered; None before any.
    updated: int | None
    id: str | None
    # Deletions at or before this time (microseconds) have been delivered.
    deleted: int | None

    def after(self, updated: int, id_: str) -> Position:
        return Position(updated, id_, self.deleted)


def encode(position: Position) -> str:
    return json.dumps(
        {"v": VERSION, "u": position.updated, "i": position.id, "d": position.deleted},
        separators=(",", ":"),
    )


def decode(cursor: str | None) -> Position | None:
    """The position in `cursor`; None for None (from the beginning)."""
    if cursor is None:
        return None
    try:
        data = json.loads(cursor)
        if data["v"] != VERSION:
            raise ValueError(f"version {data['v']}")
        updated, id_, deleted = data["u"], data["i"], data["d"]
        if (updated is None) != (id_ is None):
            raise ValueError("updated and id go together")
        return Position(
            None if updated is None else int(updated),
            None if id_ is None else str(id_),
            None if deleted is None else int(deleted),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidRequest(
            f"cursor: not a demo platform cursor ({exc})",
            errors=[{"field": "cursor", "message": "not a demo platform cursor"}],
        ) from exc
