"""GROUP BY, TIMESERIES and TOP: the query's time column, its grouped dimensions and the
one dimension TOP ranks."""

from __future__ import annotations

from warehouse.catalog import Dataset, Field
from warehouse.query import ast
from warehouse.query.checker.lookup import find_field
from warehouse.query.checker.state import State
from warehouse.query.dates import TIME_GRANULARITIES
from warehouse.query.diagnostics import did_you_mean
from warehouse.query.fields import dimension_sql, lookup
from warehouse.query.plan import Column, Top

# Cyclic granularities are numbers (the hour of the day, ...); the others are dates.
_TIME_TYPES = {
    "hour_of_day": "number",
    "day_of_week": "number",
    "week_of_year": "number",
    "month_of_year": "number",
}


def check_grouping(st: State, ds: Dataset) -> tuple[str | None, bool, list[Column], Top | None]:
    """The time granularity (TIMESERIES, or the first one GROUP BY names), whether its
    buckets are filled, the grouped dimensions and TOP."""
    q = st.q
    time_name: str | None = None
    fill = False
    if q.timeseries is not None:
        if q.timeseries.name in TIME_GRANULARITIES:
            time_name, fill = q.timeseries.name, True
        else:
            hint = did_you_mean(q.timeseries.name, TIME_GRANULARITIES)
            st.error(q.timeseries.pos, f"Unknown time granularity '{q.timeseries.name}'.{hint}")
    dims: list[Column] = []
    top: Top | None = None
    # ShopifyQL: a dimension renamed in SHOW (SHOW product_title AS product) is grouped
    # by its new name (GROUP BY product).
    renamed = {
        s.alias: s.expr.name
        for s in q.show
        if s.alias and isinstance(s.expr, ast.Name) and lookup(ds, s.alias) is None
    }
    for item in q.group_by:
        name = item.name
        if name.name in renamed:
            name = ast.Name(renamed[name.name], name.pos)
        if name.name in TIME_GRANULARITIES:
            if item.top is not None:
                st.error(name.pos, "TOP applies to dimensions, not to time granularities.")
            elif time_name is None:
                time_name = name.name
            elif time_name == name.name or any(d.name == name.name for d in dims):
                if q.timeseries is None or q.timeseries.name != name.name:
                    st.error(name.pos, f"{name.name} is grouped twice.")
            else:
                # A second time dimension (GROUP BY day, hour_of_day) groups like any
                # dimension; the first one is the query's time column.
                dims.append(_time_dimension(st, name.name))
            continue
        field = find_field(st, name, ds, dims_only=True, extra=TIME_GRANULARITIES)
        if field is None:
            continue
        if any(d.sql == dimension_sql(field) for d in dims):
            st.error(name.pos, f"{field.name} is grouped twice.")
            continue
        if item.top is not None:
            if top is not None:
                st.error(name.pos, "Only one TOP per query.")
            elif item.top < 1:
                st.error(name.pos, "TOP needs at least 1.")
            else:
                top = Top(len(dims), item.top, item.only, item.overall)
        dims.append(_dim_column(field, name.name))
    return time_name, fill, dims, top


def time_column(name: str) -> Column:
    """The query's time column, at granularity `name`."""
    title = name.replace("_", " ").capitalize()
    return Column(name, title, _TIME_TYPES.get(name, "date"), "dimension", "time")


def _time_dimension(st: State, granularity: str) -> Column:
    """A time granularity grouped as a dimension (a query's second time dimension)."""
    title = granularity.replace("_", " ").capitalize()
    sql = st.bucket(granularity)
    assert not sql.params  # the zone is a literal: see fields.zone_time_sql
    return Column(
        granularity,
        title,
        _TIME_TYPES.get(granularity, "date"),
        "dimension",
        "dim",
        sql=sql.text,
        granularity=granularity,
    )


def _dim_column(field: Field, written: str) -> Column:
    """A grouped dimension, its column named as the query wrote it (an alias such as
    sales_reversals or order_id keeps its name)."""
    return Column(written, field.title, field.type, "dimension", "dim", sql=dimension_sql(field))
