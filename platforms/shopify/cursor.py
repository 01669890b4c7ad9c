"""Sync cursors: what a Shopify sync needs to resume, as an opaque JSON string.

Two phases:
- backfill: the created_at windows [lo, hi) still to emit, in order, up to `end` (when the
  backfill began). Each window remembers the last parent id emitted from it (`after`) and
  the bulk operation that exports it (`op`), so a resumed backfill adopts operations still
  running or re-downloads finished ones, and never emits a record twice.
- incremental: `since` is when the last completed run began; a run in progress keeps its
  lower bound, start time, the page cursor reached and how many records of its window it
  emitted (for the completeness check), so a resume continues that run.

Version 1 cursors (one window walked by `lo` and `span`) are read as that window and the
rest of the range.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta

from quarry.errors import InvalidRequest

VERSION = 2


def iso(moment: datetime) -> str:
    """`2024-05-01T10:00:00Z`: the form Shopify's search syntax and our cursors use."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


@dataclass(frozen=True)
class Window:
    """created_at in [lo, hi); `after`: last parent id emitted; `op`: its bulk operation."""

    lo: str
    hi: str
    after: int | None = None
    op: str | None = None


@dataclass(frozen=True)
class BackfillCursor:
    end: str
    windows: tuple[Window, ...]


@dataclass(frozen=True)
class IncrementalCursor:
    since: str
    run_from: str | None = None
    run_until: str | None = None
    page_after: str | None = None
    emitted: int = 0


Cursor = BackfillCursor | IncrementalCursor


def encode(cursor: Cursor) -> str:
    phase = "backfill" if isinstance(cursor, BackfillCursor) else "incremental"
    return json.dumps({"v": VERSION, "phase": phase, **asdict(cursor)}, sort_keys=True)


def decode(value: str) -> Cursor:
    """The cursor in `value`; InvalidRequest when it is not one of ours."""
    try:
        doc = json.loads(value)
        phase = doc.pop("phase")
        version = doc.pop("v")
        if version not in (1, VERSION):
            raise ValueError("unknown version")
        if phase == "backfill" and version == 1:
            # Version 1 walked [lo, lo + span) up to end; `after` and `op` belong to that
            # window only, the rest of the range is a window of its own.
            lo, end = parse_time(doc["lo"]), parse_time(doc["end"])
            hi = min(end, lo + timedelta(seconds=int(doc["span"])))
            windows = [Window(doc["lo"], iso(hi), doc.get("after"), doc.get("op"))]
            if hi < end:
                windows.append(Window(iso(hi), doc["end"]))
            return BackfillCursor(end=doc["end"], windows=tuple(windows))
        if phase == "backfill":
            return BackfillCursor(
                end=doc["end"], windows=tuple(Window(**w) for w in doc["windows"])
            )
        if phase == "incremental":
            return IncrementalCursor(**doc)
        raise ValueError(f"unknown phase {phase!r}")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidRequest(f"not a Shopify sync cursor: {exc}") from exc
