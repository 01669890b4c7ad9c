"""Sync cursors: what a Shopify sync needs to resume, as an opaque JSON string.

Two phases:
- backfill: created_at windows [lo, lo + span) walked up to `end` (when the backfill
  began); `after` is the last parent id emitted in the current window, `op` the bulk
  operation whose result is being emitted (re-downloaded on resume while it is valid).
- incremental: `since` is when the last completed run began; a run in progress keeps its
  lower bound, start time and the page cursor reached, so a resume continues that run.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from quarry.errors import InvalidRequest

VERSION = 1


def iso(moment: datetime) -> str:
    """`2024-05-01T10:00:00Z`: the form Shopify's search syntax and our cursors use."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


@dataclass(frozen=True)
class BackfillCursor:
    end: str
    lo: str
    span: int
    after: int | None = None
    op: str | None = None


@dataclass(frozen=True)
class IncrementalCursor:
    since: str
    run_from: str | None = None
    run_until: str | None = None
    page_after: str | None = None


Cursor = BackfillCursor | IncrementalCursor


def encode(cursor: Cursor) -> str:
    phase = "backfill" if isinstance(cursor, BackfillCursor) else "incremental"
    return json.dumps({"v": VERSION, "phase": phase, **asdict(cursor)}, sort_keys=True)


def decode(value: str) -> Cursor:
    """The cursor in `value`; InvalidRequest when it is not one of ours."""
    try:
        doc = json.loads(value)
        phase = doc.pop("phase")
        if doc.pop("v") != VERSION:
            raise ValueError("unknown version")
        if phase == "backfill":
            return BackfillCursor(**doc)
        if phase == "incremental":
            return IncrementalCursor(**doc)
        raise ValueError(f"unknown phase {phase!r}")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidRequest(f"not a Shopify sync cursor: {exc}") from exc
