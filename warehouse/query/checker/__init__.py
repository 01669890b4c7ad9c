"""Names and types against the catalog: ast.Query -> Plan, with every diagnostic found.

The checker keeps going after an error so one answer lists every problem: an unknown field
in SHOW does not hide a misspelt date range or store name. Each clause has its module
(modifiers: WITH; windows: SINCE, UNTIL, DURING, COMPARE TO; grouping: GROUP BY,
TIMESERIES, TOP; show: SHOW; generated: the columns WITH and COMPARE TO add; where: WHERE;
having: HAVING, ORDER BY, LIMIT), sharing a State; this one runs them in order and
assembles the Plan. The checker writes no SQL: warehouse.query.fields and the compiler do.
"""

from __future__ import annotations

from datetime import UTC, datetime

from quarry.zones import zone_or_utc
from warehouse.catalog import DATASETS, Dataset
from warehouse.catalog import dataset as find_dataset
from warehouse.query import ast
from warehouse.query.checker.generated import (
    comparison_columns,
    cumulative_columns,
    group_total_columns,
)
from warehouse.query.checker.grouping import check_grouping, time_column
from warehouse.query.checker.having import check_having, check_limit, check_order
from warehouse.query.checker.modifiers import check_modifiers
from warehouse.query.checker.show import check_show
from warehouse.query.checker.state import Context, State
from warehouse.query.checker.where import check_where
from warehouse.query.checker.windows import check_windows, store_scope
from warehouse.query.dates import WEEKDAYS, Clock
from warehouse.query.diagnostics import START, Diagnostic, did_you_mean
from warehouse.query.fields import fx_date_sql, local_sql, source_for
from warehouse.query.plan import Plan
from warehouse.query.shopifyql_schemas import UNSYNCED_SCHEMAS

__all__ = ["Context", "check"]


def check(query: ast.Query, ctx: Context) -> tuple[Plan | None, list[Diagnostic]]:
    st = State(query, ctx)
    plan = _run(st)
    return (plan if not st.errors else None), st.errors


def _run(st: State) -> Plan | None:
    q = st.q
    ds = _dataset(st)
    _require_show(st)
    modifiers = check_modifiers(st)
    zone_name = modifiers.get("TIMEZONE") or st.ctx.time_zone or st.ctx.account_timezone
    currency = modifiers.get("CURRENCY") or st.ctx.account_currency
    week_start = WEEKDAYS.index(modifiers.get("WEEK_START", "monday"))
    zone = zone_or_utc(zone_name)  # an unknown name: check_modifiers reports it
    clock = Clock(st.ctx.now or datetime.now(UTC), zone, week_start)
    window, comparisons = check_windows(st, clock)
    scope = store_scope(st)
    fx = any(st.ctx.stores[s].currency != currency for s in scope)
    if ds is None:
        return None
    _read_rows(st, ds, fx, zone_name, scope, week_start)
    time_name, fill, dims, top = check_grouping(st, ds)
    time_col = time_column(time_name) if time_name else None
    columns = check_show(st, ds, time_col, dims)
    where = check_where(st, q.where) if q.where is not None else None
    metrics = [c for c in columns if c.kind == "metric"]
    generated = (
        comparison_columns(metrics, comparisons, "PERCENT_CHANGE" in modifiers)
        + group_total_columns(st, metrics, dims, "GROUP_TOTALS" in modifiers)
        + cumulative_columns(st, metrics, time_col, "CUMULATIVE_VALUES" in modifiers)
    )
    having = check_having(st, q.having, columns + generated) if q.having is not None else None
    order = check_order(st, columns + generated, time_col, metrics)
    limit = check_limit(st)
    if window is None or st.errors:
        return None
    return Plan(
        dataset=ds,
        source=st.source,
        columns=columns + generated,
        dims=dims,
        time=time_col,
        granularity=time_name,
        fill=fill,
        parts=st.parts.parts,
        where=where,
        having=having,
        order=order,
        limit=limit,
        limit_explicit=q.limit is not None,
        offset=q.offset,
        window=window,
        comparisons=comparisons,
        totals="TOTALS" in modifiers,
        percent_change="PERCENT_CHANGE" in modifiers,
        currency=currency,
        zone=zone,
        zone_name=zone_name,
        clock=clock,
        store_ids=scope,
        stores=dict(st.ctx.stores),
        top=top,
        fx=fx,
        local_sql=st.local_sql,
        fx_date_sql=fx_date_sql(st.source, {s: st.ctx.stores[s].timezone for s in scope}),
        metric_columns=metrics,
        group_pos=q.clauses.get("GROUP BY") or q.clauses.get("TIMESERIES"),
    )


def _dataset(st: State) -> Dataset | None:
    """FROM: the one dataset the query reads."""
    name = st.q.dataset
    if name is None:
        if "FROM" not in st.q.clauses:
            st.error(START, "FROM is required: name a dataset, e.g. FROM sales.")
        return None
    ds = find_dataset(name.name)
    if ds is None and name.name in UNSYNCED_SCHEMAS:
        st.error(
            name.pos,
            f"ShopifyQL has a '{name.name}' schema, but Quarry does not sync that data "
            f"({UNSYNCED_SCHEMAS[name.name]}). Quarry answers from: "
            f"{', '.join(d.name for d in DATASETS)}.",
        )
    elif ds is None:
        hint = did_you_mean(name.name, [d.name for d in DATASETS])
        st.error(name.pos, f"Unknown dataset '{name.name}'.{hint}")
    for extra in st.q.extra_datasets:
        st.error(
            extra.pos,
            f"Quarry answers from one dataset per query: FROM {name.name}, {extra.name} "
            "(a multi-fact query) is not supported; query each dataset on its own.",
        )
    return ds


def _require_show(st: State) -> None:
    q = st.q
    if q.show or "SHOW" in q.clauses:
        return
    if q.visualize:
        # ShopifyQL: a query without SHOW returns the metrics VISUALIZE names.
        q.show = list(q.visualize)
    else:
        st.error(START, "SHOW is required: say which metrics to return, e.g. SHOW total_sales.")


def _read_rows(
    st: State, ds: Dataset, fx: bool, zone_name: str, scope: list[str], week_start: int
) -> None:
    """What the clauses after FROM read the dataset's rows with (see State)."""
    st.ds, st.fx, st.week_start = ds, fx, week_start
    st.source = source_for(ds)
    zones = {st.ctx.stores[s].timezone for s in scope}
    st.local_sql = local_sql(st.source, zone_name, st.ctx.account_timezone, zones)
