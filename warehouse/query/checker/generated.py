"""The columns WITH and COMPARE TO add after SHOW's metrics: each metric over a compared
window, its percent change, its group totals and its running total."""

from __future__ import annotations

from warehouse.query.checker.state import State
from warehouse.query.dates import CYCLIC_GRANULARITIES
from warehouse.query.plan import Column, Comparison


def comparison_columns(
    metrics: list[Column], comparisons: list[Comparison], percent: bool
) -> list[Column]:
    """COMPARE TO: each metric over each compared window, then (WITH PERCENT_CHANGE) the
    percent changes, `comparison_{metric}__{name}` and `percent_change_{metric}__{name}`."""
    pairs = [(m, c.name, c.name.replace("_", " ")) for m in metrics for c in comparisons]
    out = [
        _recomputed(m, f"comparison_{m.name}__{name}", f"{m.title} ({label})", comparison=name)
        for m, name, label in pairs
    ]
    if percent:
        out += [
            Column(
                f"percent_change_{m.name}__{name}",
                f"{m.title} % change ({label})",
                "percent",
                "metric",
                "percent",
                base=m.name,
                comparison=name,
            )
            for m, name, label in pairs
            if m.type != "date"  # a date has no percent change
        ]
    return out


def group_total_columns(
    st: State, metrics: list[Column], dims: list[Column], wanted: bool
) -> list[Column]:
    """WITH GROUP_TOTALS: for each grouped dimension but the last, each metric over
    that dimension's group (and the ones before it), `{metric}__{dimension}_totals`,
    as ShopifyQL names them."""
    if not wanted:
        return []
    at = next(m.pos for m in st.q.modifiers if m.name == "GROUP_TOTALS")
    if len(dims) < 2:
        st.error(at, "WITH GROUP_TOTALS needs at least two dimensions in GROUP BY.")
        return []
    # With COMPARE TO, the group totals are the query window's: ShopifyQL's WITH page
    # does not forbid the pair, nor name a comparison's group totals, so Quarry adds
    # none for the compared periods rather than guess a name clients would read.
    out = []
    for level, dim in enumerate(dims[:-1]):
        for m in metrics:
            name, title = f"{m.name}__{dim.name}_totals", f"{m.title} ({dim.title} total)"
            out.append(_recomputed(m, name, title, level=level))
    return out


def cumulative_columns(
    st: State, metrics: list[Column], time_col: Column | None, wanted: bool
) -> list[Column]:
    """WITH CUMULATIVE_VALUES: `{metric}__cumulative`, the running total of each
    additive metric along the time column, within each group."""
    if not wanted:
        return []
    at = next(m.pos for m in st.q.modifiers if m.name == "CUMULATIVE_VALUES")
    if time_col is None or (st.q.timeseries is None and time_col.name in CYCLIC_GRANULARITIES):
        st.error(
            at,
            "WITH CUMULATIVE_VALUES adds running totals along time: add TIMESERIES or a "
            "time dimension to GROUP BY.",
        )
        return []
    out = []
    for m in metrics:
        if not m.additive:
            continue
        out.append(
            Column(
                f"{m.name}__cumulative",
                f"{m.title} (cumulative)",
                m.type,
                "metric",
                "cumulative",
                money=m.money,
                base=m.name,
            )
        )
    if not out:
        st.error(
            at,
            "WITH CUMULATIVE_VALUES applies to additive metrics (sums and counts); none is shown.",
        )
    return out


def _recomputed(
    m: Column, name: str, title: str, *, comparison: str | None = None, level: int | None = None
) -> Column:
    """Metric `m` computed again over other rows: a compared window's (`comparison`), or
    the groups of the first `level` + 1 dimensions (a group total)."""
    kind = "comparison" if comparison is not None else "group_total"
    return Column(
        name,
        title,
        m.type,
        "metric",
        kind,
        expr=m.expr,
        money=m.money,
        base=m.name,
        comparison=comparison,
        level=level,
    )
