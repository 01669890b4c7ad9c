"""SINCE, UNTIL, DURING and COMPARE TO: the query's window and the compared ones; and the
stores in scope."""

from __future__ import annotations

import re

from warehouse.query import ast
from warehouse.query.checker.state import State
from warehouse.query.dates import (
    Clock,
    DateError,
    Window,
    comparison_window,
    main_window,
    resolve_point,
)
from warehouse.query.diagnostics import START
from warehouse.query.plan import Comparison


def check_windows(st: State, clock: Clock) -> tuple[Window | None, list[Comparison]]:
    q = st.q
    if q.during is not None and (q.since is not None or q.until is not None):
        st.error(q.clauses["DURING"], "DURING sets the whole window: drop SINCE and UNTIL.")
        return None, []
    try:
        window = main_window(q.since, q.until, q.during, clock)
    except DateError as exc:
        at = next(
            (p.pos for p in (q.during, q.since, q.until) if p is not None and _bad(p, clock)),
            q.clauses.get("DURING") or q.clauses.get("SINCE") or q.clauses.get("UNTIL", START),
        )
        st.error(at, str(exc))
        return None, []
    comparisons: list[Comparison] = []
    for item in q.compare:
        if item.keyword == "targets":
            st.error(
                item.pos,
                "COMPARE TO TARGETS compares with the metric targets set in Shopify's "
                "admin, which Quarry does not sync.",
            )
            continue
        name = item.keyword or comparison_name(item.text)
        if any(c.name == name for c in comparisons):
            st.error(item.pos, f"COMPARE TO {item.text} is given twice.")
            continue
        try:
            comparisons.append(Comparison(name, comparison_window(item, window, clock)))
        except DateError as exc:
            st.error(item.pos, str(exc))
    return window, comparisons


def store_scope(st: State) -> list[str]:
    """Readable stores, narrowed by the body's store_ids (which never widen them)."""
    readable = list(st.ctx.stores)
    if st.ctx.store_ids is None:
        return readable
    wanted = set(st.ctx.store_ids)
    return [s for s in readable if s in wanted]


def comparison_name(text: str) -> str:
    """The `<name>` of a comparison's generated columns, as ShopifyQL derives it from what
    was written: a date loses its dashes (2023-01-01 -> 20230101), a minus sign becomes
    `sub` (startOfQuarter(-3q) -> startOfQuarter_sub_3q, -14d -> sub_14d), every other run
    of non-alphanumerics one `_`, and UNTIL is lowercased."""
    name = re.sub(r"(\d{4})-(\d{2})-(\d{2})", r"\1\2\3", text)
    name = re.sub(r"(\d{2}):(\d{2})", r"\1\2", name)
    name = re.sub(r"\b(?i:until)\b", "until", name)
    name = re.sub(r"-(?=\d)", "_sub_", name)
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")


def _bad(point: ast.DatePoint, clock: Clock) -> bool:
    """Is `point` the one the window's error is about?"""
    try:
        resolve_point(point, clock)
    except DateError:
        return True
    return False
