"""Names and types against the catalog: ast.Query -> Plan, with every diagnostic found.

The checker keeps going after an error so one answer lists every problem: an unknown field
in SHOW does not hide a misspelt date range or store name.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from functools import cache
from typing import Any

from warehouse.catalog import DATASETS, Dataset, Field
from warehouse.catalog import dataset as find_dataset
from warehouse.query import ast
from warehouse.query.compiler import time_bucket_sql
from warehouse.query.currencies import CURRENCIES
from warehouse.query.dates import (
    CYCLIC_GRANULARITIES,
    TIME_GRANULARITIES,
    WEEKDAYS,
    Clock,
    DateError,
    Window,
    comparison_window,
    main_window,
)
from warehouse.query.diagnostics import START, Diagnostic, Pos, did_you_mean
from warehouse.query.fields import (
    NOT_SYNCED,
    RATIO_METRICS,
    PartRegistry,
    aggregate,
    dimension_sql,
    field_names,
    is_semantic,
    lookup,
    source_for,
)
from warehouse.query.parser import AGGREGATES, ATTRIBUTION_MODIFIERS
from warehouse.query.plan import (
    Arith,
    Column,
    Comparison,
    Const,
    HArith,
    HCond,
    HOperand,
    HValue,
    MetricExpr,
    Plan,
    RBetween,
    RBool,
    RCompare,
    RCond,
    RIn,
    RMatch,
    RNot,
    RNull,
    StoreInfo,
    Top,
)
from warehouse.query.shopifyql_schemas import UNSYNCED_SCHEMAS
from warehouse.query.sql import Sql
from warehouse.tables import quote_literal

DEFAULT_LIMIT = 1000
# The most rows a query may return by default (QUARRY_QUERY_MAX_GROUPS): LIMIT may ask for
# up to that many.
MAX_GROUPS = 100_000
_TIME_TYPES = {
    "hour_of_day": "number",
    "day_of_week": "number",
    "week_of_year": "number",
    "month_of_year": "number",
}
# Metrics a running total means something for: sums and counts add up along time; ratios,
# averages, medians, minimums and maximums do not (ShopifyQL: "additive metrics").
_ADDITIVE = ("sum", "count")
_FUNC_TITLES = {
    "sum": "Sum",
    "avg": "Average",
    "min": "Minimum",
    "max": "Maximum",
    "count": "Count",
    "count_distinct": "Distinct count",
    "median": "Median",
}


@dataclass(frozen=True)
class Context:
    """What a query is checked against besides the catalog."""

    stores: Mapping[str, StoreInfo]  # readable stores, by id
    account_currency: str
    account_timezone: str
    time_zone: str | None = None  # the request body's time_zone
    store_ids: Collection[str] | None = None  # the request body's store_ids
    now: datetime | None = None
    max_groups: int = MAX_GROUPS  # the most rows a query may return; LIMIT's maximum


class _Fail(Exception):
    """Abandons one item after its diagnostic is recorded."""


# Files of the system's zone folder that are not zones one may name: `localtime` is the
# server's own zone (a client must not depend on where Quarry runs), `posixrules` a
# default of the zone compiler.
_NOT_ZONES = frozenset({"localtime", "posixrules"})


@cache
def time_zones() -> frozenset[str]:
    """The IANA zone names a query or a request may name (WITH TIMEZONE, `time_zone`)."""
    return frozenset(zoneinfo.available_timezones()) - _NOT_ZONES


def check(query: ast.Query, ctx: Context) -> tuple[Plan | None, list[Diagnostic]]:
    checker = _Checker(query, ctx)
    plan = checker.run()
    return (plan if not checker.errors else None), checker.errors


class _Checker:
    def __init__(self, query: ast.Query, ctx: Context) -> None:
        self.q = query
        self.ctx = ctx
        self.errors: list[Diagnostic] = []
        self.parts = PartRegistry()

    def error(self, pos: Pos, message: str) -> _Fail:
        self.errors.append(Diagnostic(pos, message))
        return _Fail()

    # ---- the whole query ----

    def run(self) -> Plan | None:
        q = self.q
        ds = self.dataset()
        if not q.show and "SHOW" not in q.clauses:
            if q.visualize:
                # ShopifyQL: a query without SHOW returns the metrics VISUALIZE names.
                q.show = list(q.visualize)
            else:
                self.error(
                    START,
                    "SHOW is required: say which metrics to return, e.g. SHOW total_sales.",
                )
        modifiers = self.modifiers()
        zone_name = modifiers.get("TIMEZONE") or self.ctx.time_zone or self.ctx.account_timezone
        currency = modifiers.get("CURRENCY") or self.ctx.account_currency
        week_start = WEEKDAYS.index(modifiers.get("WEEK_START", "monday"))
        now = self.ctx.now or datetime.now(UTC)
        try:
            zone = zoneinfo.ZoneInfo(zone_name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            zone = zoneinfo.ZoneInfo("UTC")  # reported by modifiers(); keep checking
        clock = Clock(now, zone, week_start)
        window, comparisons = self.windows(clock)
        scope = self.scope()
        fx = any(self.ctx.stores[s].currency != currency for s in scope)
        if ds is None:
            return None
        self.ds, self.fx = ds, fx
        source = source_for(ds)
        local_sql = self.local_sql(source, zone_name, scope)
        self.bucket_of = lambda g: time_bucket_sql(g, local_sql, source, week_start)
        time_name, fill, dims, top = self.grouping(ds)
        time_col = self.time_column(time_name) if time_name else None
        columns = self.show(ds, time_col, dims)
        where = self.where(q.where) if q.where is not None else None
        metrics = [c for c in columns if c.kind == "metric"]
        generated = self.generated(metrics, comparisons, "PERCENT_CHANGE" in modifiers)
        group_totals = self.group_totals(metrics, dims, top, "GROUP_TOTALS" in modifiers)
        cumulative = self.cumulative(metrics, time_col, "CUMULATIVE_VALUES" in modifiers)
        generated = generated + group_totals + cumulative
        having = self.having(q.having, columns + generated) if q.having is not None else None
        order = self.order(columns + generated, time_col, metrics)
        limit = self.limit()
        if window is None or self.errors:
            return None
        return Plan(
            dataset=ds,
            source=source,
            columns=columns + generated,
            dims=dims,
            time=time_col,
            granularity=time_name,
            fill=fill,
            parts=self.parts.parts,
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
            stores=dict(self.ctx.stores),
            top=top,
            fx=fx,
            local_sql=local_sql,
            fx_date_sql=self.fx_date_sql(source, scope),
            metric_columns=metrics,
            group_pos=q.clauses.get("GROUP BY") or q.clauses.get("TIMESERIES"),
        )

    def dataset(self) -> Dataset | None:
        name = self.q.dataset
        if name is None:
            if "FROM" not in self.q.clauses:
                self.error(START, "FROM is required: name a dataset, e.g. FROM sales.")
            return None
        ds = find_dataset(name.name)
        if ds is None and name.name in UNSYNCED_SCHEMAS:
            self.error(
                name.pos,
                f"ShopifyQL has a '{name.name}' schema, but Quarry does not sync that data "
                f"({UNSYNCED_SCHEMAS[name.name]}). Quarry answers from: "
                f"{', '.join(d.name for d in DATASETS)}.",
            )
        elif ds is None:
            hint = did_you_mean(name.name, [d.name for d in DATASETS])
            self.error(name.pos, f"Unknown dataset '{name.name}'.{hint}")
        for extra in self.q.extra_datasets:
            self.error(
                extra.pos,
                f"Quarry answers from one dataset per query: FROM {name.name}, {extra.name} "
                "(a multi-fact query) is not supported; query each dataset on its own.",
            )
        return ds

    # ---- WITH ----

    def modifiers(self) -> dict[str, str]:
        seen: dict[str, str] = {}
        for m in self.q.modifiers:
            if m.name in seen:
                self.error(m.pos, f"WITH {m.name} is given twice.")
                continue
            value = m.value or ""
            pos = m.value_pos or m.pos
            if m.name in ATTRIBUTION_MODIFIERS:
                self.error(
                    m.pos,
                    f"WITH {m.name} credits sales to marketing touchpoints (sessions and "
                    "clicks), which Quarry does not sync: it cannot attribute sales.",
                )
            elif m.name == "CURRENCY":
                value = value.upper()
                if value not in CURRENCIES:
                    hint = did_you_mean(value, CURRENCIES)
                    self.error(pos, f"Unknown currency '{m.value}'.{hint}")
                    continue
            elif m.name == "TIMEZONE":
                if value not in time_zones():
                    hint = did_you_mean(value, time_zones())
                    self.error(pos, f"Unknown time zone '{value}'.{hint}")
                    continue
            elif m.name == "WEEK_START":
                value = value.lower()
                if value not in WEEKDAYS:
                    hint = did_you_mean(value, WEEKDAYS)
                    self.error(pos, f"Unknown week start '{m.value}'.{hint}")
                    continue
            # PERCENT_CHANGE without COMPARE TO adds no columns, as in ShopifyQL.
            seen[m.name] = value
        return seen

    # ---- windows and scope ----

    def windows(self, clock: Clock) -> tuple[Window | None, list[Comparison]]:
        q = self.q
        if q.during is not None and (q.since is not None or q.until is not None):
            self.error(q.clauses["DURING"], "DURING sets the whole window: drop SINCE and UNTIL.")
            return None, []
        try:
            window = main_window(q.since, q.until, q.during, clock)
        except DateError as exc:
            at = next(
                (p.pos for p in (q.during, q.since, q.until) if p is not None and _bad(p, clock)),
                q.clauses.get("DURING") or q.clauses.get("SINCE") or q.clauses.get("UNTIL", START),
            )
            self.error(at, str(exc))
            return None, []
        comparisons: list[Comparison] = []
        for item in q.compare:
            if item.keyword == "targets":
                self.error(
                    item.pos,
                    "COMPARE TO TARGETS compares with the metric targets set in Shopify's "
                    "admin, which Quarry does not sync.",
                )
                continue
            name = item.keyword or comparison_name(item.text)
            if any(c.name == name for c in comparisons):
                self.error(item.pos, f"COMPARE TO {item.text} is given twice.")
                continue
            try:
                comparisons.append(Comparison(name, comparison_window(item, window, clock)))
            except DateError as exc:
                self.error(item.pos, str(exc))
        return window, comparisons

    def scope(self) -> list[str]:
        """Readable stores, narrowed by the body's store_ids (which never widen them)."""
        readable = list(self.ctx.stores)
        if self.ctx.store_ids is None:
            return readable
        wanted = set(self.ctx.store_ids)
        return [s for s in readable if s in wanted]

    def local_sql(self, source: Any, zone_name: str, scope: list[str]) -> Sql:
        """The event's local time in the query zone. Converting at query time is most of
        the cost of a big group-by, so use the column computed at sync when it matches.
        The zone is a literal (it is one of time_zones(), and quoted): a time bucket can
        then be grouped on, GROUPING SETS included, without parameters in the grouping."""
        if source.account_local and zone_name == self.ctx.account_timezone:
            return Sql(f"t.{source.account_local}")
        zones = {self.ctx.stores[s].timezone for s in scope}
        if source.store_local and zones == {zone_name}:
            return Sql(f"t.{source.store_local}")
        return Sql(f"timezone({quote_literal(zone_name)}, t.{source.time_column})")

    def fx_date_sql(self, source: Any, scope: list[str]) -> str:
        """The event's date in its store's zone: the day whose exchange rate applies. Each
        zone a literal, chosen by store: timezone() with the zone read from a column
        converts row by row, and took most of a FROM customers query at 1M orders."""
        if source.store_local:
            return f"CAST(t.{source.store_local} AS DATE)"
        moment = f"t.{source.time_column}"
        by_zone: dict[str, list[str]] = {}
        for store_id in scope:
            by_zone.setdefault(self.ctx.stores[store_id].timezone, []).append(store_id)
        if len(by_zone) <= 1:
            zone = next(iter(by_zone), "UTC")
            return f"CAST(timezone({quote_literal(zone)}, {moment}) AS DATE)"
        branches = " ".join(
            f"WHEN t.store_id IN ({', '.join(quote_literal(s) for s in stores)}) "
            f"THEN timezone({quote_literal(zone)}, {moment})"
            for zone, stores in sorted(by_zone.items())
        )
        return f"CAST(CASE {branches} END AS DATE)"

    # ---- GROUP BY / TIMESERIES ----

    def grouping(self, ds: Dataset) -> tuple[str | None, bool, list[Column], Top | None]:
        q = self.q
        time_name: str | None = None
        fill = False
        if q.timeseries is not None:
            if q.timeseries.name in TIME_GRANULARITIES:
                time_name, fill = q.timeseries.name, True
            else:
                hint = did_you_mean(q.timeseries.name, TIME_GRANULARITIES)
                self.error(
                    q.timeseries.pos, f"Unknown time granularity '{q.timeseries.name}'.{hint}"
                )
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
                    self.error(name.pos, "TOP applies to dimensions, not to time granularities.")
                elif time_name is None:
                    time_name = name.name
                elif time_name == name.name or any(d.name == name.name for d in dims):
                    if q.timeseries is None or q.timeseries.name != name.name:
                        self.error(name.pos, f"{name.name} is grouped twice.")
                else:
                    # A second time dimension (GROUP BY day, hour_of_day) groups like any
                    # dimension; the first one is the query's time column.
                    dims.append(self.time_dimension(name.name))
                continue
            field = self.field(name, ds, dims_only=True, extra=TIME_GRANULARITIES)
            if field is None:
                continue
            if any(d.sql == dimension_sql(field) for d in dims):
                self.error(name.pos, f"{field.name} is grouped twice.")
                continue
            if item.top is not None:
                if top is not None:
                    self.error(name.pos, "Only one TOP per query.")
                elif item.top < 1:
                    self.error(name.pos, "TOP needs at least 1.")
                else:
                    top = Top(len(dims), item.top, item.only, item.overall)
            dims.append(self.dim_column(field, name.name))
        return time_name, fill, dims, top

    def time_dimension(self, granularity: str) -> Column:
        """A time granularity grouped as a dimension (a query's second time dimension)."""
        title = granularity.replace("_", " ").capitalize()
        sql = self.bucket_of(granularity)
        assert not sql.params  # the zone is a literal: see local_sql
        return Column(
            granularity,
            title,
            _TIME_TYPES.get(granularity, "date"),
            "dimension",
            "dim",
            sql=sql.text,
            granularity=granularity,
        )

    def field(
        self, name: ast.Name, ds: Dataset, *, dims_only: bool = False, extra: tuple[str, ...] = ()
    ) -> Field | None:
        field = lookup(ds, name.name)
        if field is None and name.name in NOT_SYNCED.get(ds.name, {}):
            reason = NOT_SYNCED[ds.name][name.name]
            self.error(
                name.pos,
                f"{name.name} is a field of ShopifyQL's {ds.name} schema that Quarry cannot "
                f"answer: {reason}.",
            )
            return None
        if field is None:
            pool = [f.name for f in field_names(ds) if not dims_only or f.role == "dimension"]
            hint = did_you_mean(name.name, [*pool, *extra])
            self.error(name.pos, f"Unknown field '{name.name}' in {ds.name}.{hint}")
            return None
        if dims_only and field.role != "dimension":
            self.error(name.pos, f"{field.name} is a metric; GROUP BY takes dimensions.")
            return None
        return field

    def dim_column(self, field: Field, written: str) -> Column:
        """A grouped dimension, its column named as the query wrote it (an alias such as
        sales_reversals or order_id keeps its name)."""
        return Column(
            written, field.title, field.type, "dimension", "dim", sql=dimension_sql(field)
        )

    def time_column(self, name: str) -> Column:
        title = name.replace("_", " ").capitalize()
        return Column(name, title, _TIME_TYPES.get(name, "date"), "dimension", "time")

    # ---- SHOW ----

    def show(self, ds: Dataset, time_col: Column | None, dims: list[Column]) -> list[Column]:
        shown: list[Column] = []
        names: dict[str, Pos] = {}
        grouped = {d.name: d for d in dims}
        for item in self.q.show:
            try:
                col = self.show_item(item, ds, time_col, grouped)
            except _Fail:
                continue
            if col.name in names:
                self.error(item.pos, f"Two columns are named '{col.name}': add AS to rename one.")
                continue
            names[col.name] = item.pos
            shown.append(col)
        # Grouped columns not in SHOW (under any name) still come back, first, so every row
        # says its group.
        covered = {(c.kind, c.sql) for c in shown if c.kind in ("time", "dim")}
        grouped_cols = ([time_col] if time_col else []) + dims
        missing = [c for c in grouped_cols if (c.kind, c.sql) not in covered]
        return [*missing, *shown]

    def show_item(
        self, item: ast.ShowItem, ds: Dataset, time_col: Column | None, grouped: dict[str, Column]
    ) -> Column:
        expr = item.expr
        if isinstance(expr, ast.Name):
            if time_col is not None and expr.name == time_col.name:
                return _renamed(time_col, item.alias)
            if expr.name in TIME_GRANULARITIES and expr.name not in grouped:
                raise self.error(
                    expr.pos,
                    f"{expr.name} is a time granularity: add it to GROUP BY or TIMESERIES.",
                )
            if expr.name in grouped and grouped[expr.name].granularity:
                return _renamed(grouped[expr.name], item.alias)
            field = lookup(ds, expr.name)
            if field is not None and field.role == "dimension":
                sql = dimension_sql(field)
                match = next((d for d in grouped.values() if d.sql == sql), None)
                if match is None:
                    raise self.error(expr.pos, f"{field.name} is a dimension: add it to GROUP BY.")
                return _renamed(match, item.alias or expr.name)
        metric, type_ = self.metric(expr, ds)
        name, title = self.metric_name(item)
        return Column(
            name,
            title,
            type_,
            "metric",
            "metric",
            expr=metric,
            money=type_ == "money",
            additive=self.is_additive(expr, ds),
        )

    def is_additive(self, expr: ast.Expr, ds: Dataset) -> bool:
        """Sums and counts (and their sums and differences) add up along time. `orders`
        does too: an order's events share its time, so it counts in one bucket only."""
        if isinstance(expr, ast.BinOp):
            return expr.op in "+-" and all(self.is_additive(e, ds) for e in (expr.left, expr.right))
        if isinstance(expr, ast.Neg):
            return self.is_additive(expr.operand, ds)
        if isinstance(expr, ast.Call):
            return expr.func in _ADDITIVE
        if isinstance(expr, ast.Name):
            field = lookup(ds, expr.name)
            if field is None:
                return False
            if ds.name == "sales" and field.name in ("customers", "average_order_value"):
                return False
            return field.name == "orders" or field.default_aggregation in _ADDITIVE
        return False

    def metric_name(self, item: ast.ShowItem) -> tuple[str, str]:
        expr = item.expr
        if isinstance(expr, ast.Name):
            field = lookup(self.ds, expr.name)
            default = (expr.name, field.title if field else expr.name)
        elif isinstance(expr, ast.Call):
            field = lookup(self.ds, expr.arg.name)
            of = field.title if field else expr.arg.name
            title = f"{_FUNC_TITLES.get(expr.func, expr.func)} of {of}"
            default = (f"{expr.func}_{expr.arg.name}", title)
        else:
            words = {"+": " plus ", "-": " minus ", "*": " times ", "/": " div "}
            text = "".join(words.get(ch, ch) for ch in item.text.lower())
            default = (re.sub(r"[^a-z0-9]+", "_", text).strip("_") or "value", item.text)
        if item.alias:
            return item.alias, item.alias
        return default

    def metric(self, expr: ast.Expr, ds: Dataset) -> tuple[MetricExpr, str]:
        """A SHOW expression as a metric expression over SQL aggregates, with its type."""
        if isinstance(expr, ast.NumberLit):
            return Const(expr.value), "number"
        if isinstance(expr, ast.Neg):
            inner, type_ = self.metric(expr.operand, ds)
            return Arith("*", Const(Decimal(-1)), inner), type_
        if isinstance(expr, ast.BinOp):
            left, lt = self.metric(expr.left, ds)
            right, rt = self.metric(expr.right, ds)
            return Arith(expr.op, left, right), _arith_type(expr.op, lt, rt)
        if isinstance(expr, ast.Name):
            field = self.field(expr, ds)
            if field is None:
                raise _Fail()
            if field.role != "metric":
                raise self.error(expr.pos, f"{field.name} is a dimension: add it to GROUP BY.")
            func = field.default_aggregation or "sum"
            ratio = ds.name == "sales" and field.name in RATIO_METRICS
            metric_type = "ratio" if ratio else _agg_type(func, field)
            return aggregate(field, func, self.fx, self.parts, ds), metric_type
        if isinstance(expr, ast.Call):
            if expr.func not in AGGREGATES:
                hint = did_you_mean(expr.func, AGGREGATES)
                raise self.error(expr.pos, f"Unknown function '{expr.func}'.{hint}")
            field = self.field(expr.arg, ds)
            if field is None:
                raise _Fail()
            self.check_aggregation(expr, field)
            return aggregate(field, expr.func, self.fx, self.parts, ds), _agg_type(expr.func, field)
        raise self.error(expr.pos, "SHOW takes fields, aggregations and arithmetic between them.")

    def check_aggregation(self, call: ast.Call, field: Field) -> None:
        func = call.func
        if is_semantic(self.ds, field.name):
            raise self.error(
                call.pos,
                f"{field.name} is already an aggregate ({field.description.rstrip('.')}); "
                f"write it without {func}().",
            )
        if field.aggregate_only and func != "count":
            raise self.error(
                call.pos, f"{field.name} can only be counted: use count({field.name})."
            )
        numeric = field.type in ("number", "money")
        if func in ("sum", "avg", "median") and not numeric:
            raise self.error(
                call.pos, f"{func}() needs a number or money field; {field.name} is {field.type}."
            )
        if func in ("min", "max") and not (numeric or field.type == "date"):
            raise self.error(
                call.pos,
                f"{func}() needs a number, money or date field; {field.name} is {field.type}.",
            )

    def generated(
        self, metrics: list[Column], comparisons: list[Comparison], percent: bool
    ) -> list[Column]:
        out: list[Column] = []
        for m in metrics:
            for c in comparisons:
                label = c.name.replace("_", " ")
                out.append(
                    Column(
                        f"comparison_{m.name}__{c.name}",
                        f"{m.title} ({label})",
                        m.type,
                        "metric",
                        "comparison",
                        expr=m.expr,
                        money=m.money,
                        base=m.name,
                        comparison=c.name,
                    )
                )
        if percent:
            for m in metrics:
                for c in comparisons:
                    label = c.name.replace("_", " ")
                    out.append(
                        Column(
                            f"percent_change_{m.name}__{c.name}",
                            f"{m.title} % change ({label})",
                            "percent",
                            "metric",
                            "percent",
                            base=m.name,
                            comparison=c.name,
                        )
                    )
        return out

    def group_totals(
        self, metrics: list[Column], dims: list[Column], top: Top | None, wanted: bool
    ) -> list[Column]:
        """WITH GROUP_TOTALS: for each grouped dimension but the last, each metric over
        that dimension's group (and the ones before it), `{metric}__{dimension}_totals`,
        as ShopifyQL names them."""
        if not wanted:
            return []
        at = next(m.pos for m in self.q.modifiers if m.name == "GROUP_TOTALS")
        if len(dims) < 2:
            self.error(at, "WITH GROUP_TOTALS needs at least two dimensions in GROUP BY.")
            return []
        # With COMPARE TO, the group totals are the query window's: ShopifyQL's WITH page
        # does not forbid the pair, nor name a comparison's group totals, so Quarry adds
        # none for the compared periods rather than guess a name clients would read.
        out = []
        for level, dim in enumerate(dims[:-1]):
            for m in metrics:
                out.append(
                    Column(
                        f"{m.name}__{dim.name}_totals",
                        f"{m.title} ({dim.title} total)",
                        m.type,
                        "metric",
                        "group_total",
                        expr=m.expr,
                        money=m.money,
                        base=m.name,
                        level=level,
                    )
                )
        return out

    def cumulative(
        self, metrics: list[Column], time_col: Column | None, wanted: bool
    ) -> list[Column]:
        """WITH CUMULATIVE_VALUES: `{metric}__cumulative`, the running total of each
        additive metric along the time column, within each group."""
        if not wanted:
            return []
        at = next(m.pos for m in self.q.modifiers if m.name == "CUMULATIVE_VALUES")
        if time_col is None or (
            self.q.timeseries is None and time_col.name in CYCLIC_GRANULARITIES
        ):
            self.error(
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
            self.error(
                at,
                "WITH CUMULATIVE_VALUES applies to additive metrics (sums and counts); "
                "none is shown.",
            )
        return out

    # ---- WHERE ----

    def where(self, cond: ast.Cond) -> RCond | None:
        try:
            return self.condition(cond)
        except _Fail:
            return None

    def condition(self, cond: ast.Cond) -> RCond:
        if isinstance(cond, (ast.And, ast.Or)):
            items, failed = [], False
            for c in cond.items:
                try:
                    items.append(self.condition(c))
                except _Fail:
                    failed = True  # keep checking the siblings
            if failed:
                raise _Fail()
            return RBool("AND" if isinstance(cond, ast.And) else "OR", tuple(items))
        if isinstance(cond, ast.Not):
            return RNot(self.condition(cond.item))
        left = cond.left
        if not isinstance(left, ast.Name):
            raise self.error(
                cond.pos, "WHERE compares a dimension with values; use HAVING for metrics."
            )
        if left.name == "store" and isinstance(cond, (ast.Compare, ast.InList)):
            return self.store_condition(cond)
        if isinstance(cond, ast.TextMatch) and cond.kind == "matches":
            raise self.error(
                cond.pos,
                "MATCHES filters by related records (segments, products bought), which "
                "Quarry does not keep: filter the dimensions with =, IN or CONTAINS instead.",
            )
        field = lookup(self.ds, left.name)
        if field is None and left.name in NOT_SYNCED.get(self.ds.name, {}):
            self.field(left, self.ds)  # says why
            raise _Fail()
        if field is None:
            pool = [f.name for f in field_names(self.ds) if f.role == "dimension"]
            raise self.error(
                left.pos,
                f"Unknown field '{left.name}' in {self.ds.name}.{did_you_mean(left.name, pool)}",
            )
        if field.role != "dimension":
            raise self.error(
                left.pos,
                f"WHERE filters dimensions; {field.name} is a metric, so filter it with HAVING.",
            )
        sql = dimension_sql(field)
        if field.type == "date":
            return self.date_condition(cond, field, sql)
        if isinstance(cond, ast.Compare):
            return RCompare(sql, cond.op, self.literal(cond.right, field))
        if isinstance(cond, ast.InList):
            return RIn(sql, tuple(self.literal(v, field) for v in cond.values), cond.negated)
        if isinstance(cond, ast.Between):
            low, high = self.literal(cond.low, field), self.literal(cond.high, field)
            return RBetween(sql, low, high, cond.negated)
        if isinstance(cond, ast.TextMatch):
            if field.type != "string":
                raise self.error(
                    cond.pos,
                    f"{cond.kind.upper()} needs a text field; {field.name} is {field.type}.",
                )
            return RMatch(sql, cond.kind, self.literal(cond.value, field), cond.negated)
        assert isinstance(cond, ast.IsNull)
        return RNull(sql, cond.negated)

    def literal(self, expr: ast.Expr, field: Field) -> Any:
        """A WHERE value, checked against the field's type (bound as a parameter later)."""
        value: Any
        if isinstance(expr, ast.StringLit):
            value, kind = expr.value, "string"
        elif isinstance(expr, ast.NumberLit):
            value, kind = expr.value, "number"
        elif isinstance(expr, ast.Neg) and isinstance(expr.operand, ast.NumberLit):
            value, kind = -expr.operand.value, "number"
        elif isinstance(expr, ast.BoolLit):
            value, kind = expr.value, "boolean"
        elif isinstance(expr, ast.DateLit):
            value, kind = expr.value, "date"
        else:
            raise self.error(
                expr.pos, "Expected a value here: 'text', a number, TRUE/FALSE or a date."
            )
        wanted = "number" if field.type in ("number", "money", "percent") else field.type
        if kind != wanted:
            raise self.error(
                expr.pos, f"{field.name} is {field.type}; compare it with a {wanted} value."
            )
        return value

    def store_condition(self, cond: ast.Compare | ast.InList) -> RCond:
        """store = 'name' / store IN ('name', ...): names among the readable stores only.
        A name the key cannot read gets the same answer as one that does not exist."""
        if isinstance(cond, ast.Compare):
            if cond.op not in ("=", "!="):
                raise self.error(cond.pos, "Compare store with = , != or IN (store names).")
            values: tuple[ast.Expr, ...] = (cond.right,)
            negated = cond.op == "!="
        else:
            values, negated = cond.values, cond.negated
        readable = self.ctx.stores
        by_name = {info.name: sid for sid, info in readable.items()}
        by_folded: dict[str, list[str]] = {}
        for sid, info in readable.items():
            by_folded.setdefault(info.name.casefold(), []).append(sid)
        ids: list[str] = []
        failed = False
        for v in values:
            if not isinstance(v, ast.StringLit):
                self.error(v.pos, "Store names are text in single quotes, e.g. 'Main Street'.")
                failed = True
                continue
            if v.value in by_name:
                ids.append(by_name[v.value])
            elif len(by_folded.get(v.value.casefold(), [])) == 1:
                ids.append(by_folded[v.value.casefold()][0])
            else:
                hint = did_you_mean(v.value, [i.name for i in readable.values()])
                self.error(v.pos, f"Unknown store '{v.value}'.{hint}")
                failed = True
        if failed:
            raise _Fail()
        return RIn("t.store_id", tuple(ids), negated)

    def date_condition(self, cond: ast.Cond, field: Field, sql: str) -> RCond:
        """Dates compare in the query's zone: `created_at = 2024-03-10` is that local day."""
        clock = Clock(self.ctx.now or datetime.now(UTC), zoneinfo.ZoneInfo("UTC"))
        del clock

        def bounds(expr: ast.Expr) -> tuple[datetime, datetime]:
            value = self.literal(expr, field)
            if isinstance(value, datetime):
                at = value if value.tzinfo else value.replace(tzinfo=self.zone_for_dates())
                return at, at
            assert isinstance(value, date)
            zone = self.zone_for_dates()
            start = datetime.combine(value, datetime.min.time(), zone).astimezone(UTC)
            nxt = datetime.combine(value + timedelta(days=1), datetime.min.time(), zone)
            return start, nxt.astimezone(UTC)

        if isinstance(cond, ast.Compare):
            start, end = bounds(cond.right)
            instant = start == end
            if cond.op == "=":
                return RCompare(sql, "=", start) if instant else RBetween(sql, start, end, False)
            if cond.op == "!=":
                return RCompare(sql, "!=", start) if instant else RBetween(sql, start, end, True)
            bound = {"<": start, ">=": start, "<=": end, ">": end}[cond.op]
            op = cond.op if instant else {"<": "<", ">=": ">=", "<=": "<", ">": ">="}[cond.op]
            return RCompare(sql, op, bound)
        if isinstance(cond, ast.Between):
            low, _ = bounds(cond.low)
            _, high = bounds(cond.high)
            return RBetween(sql, low, high, cond.negated)
        if isinstance(cond, ast.IsNull):
            return RNull(sql, cond.negated)
        raise self.error(
            cond.pos, f"{field.name} is a date: compare it with =, <, >, BETWEEN or IS NULL."
        )

    def zone_for_dates(self) -> zoneinfo.ZoneInfo:
        name = next((m.value for m in self.q.modifiers if m.name == "TIMEZONE"), None)
        name = name or self.ctx.time_zone or self.ctx.account_timezone
        return zoneinfo.ZoneInfo(name if name in time_zones() else "UTC")

    # ---- HAVING, ORDER BY, LIMIT ----

    def having(self, cond: ast.Cond, columns: list[Column]) -> HCond | None:
        names = {c.name for c in columns}

        def operand(expr: ast.Expr) -> HOperand:
            if isinstance(expr, ast.Name):
                if expr.name not in names:
                    hint = did_you_mean(expr.name, names)
                    raise self.error(
                        expr.pos,
                        f"HAVING can use the columns of SHOW; '{expr.name}' is not one.{hint}",
                    )
                return HValue(column=expr.name)
            if isinstance(expr, ast.Call):
                name = f"{expr.func}_{expr.arg.name}"
                if name not in names:
                    raise self.error(
                        expr.pos,
                        "HAVING can use the columns of SHOW; "
                        f"add {expr.func}({expr.arg.name}) to SHOW.",
                    )
                return HValue(column=name)
            if isinstance(expr, ast.NumberLit):
                return HValue(const=expr.value)
            if isinstance(expr, (ast.StringLit, ast.BoolLit)):
                return HValue(const=expr.value)
            if isinstance(expr, ast.Neg):
                return HArith("*", HValue(const=Decimal(-1)), operand(expr.operand))
            if isinstance(expr, ast.BinOp):
                return HArith(expr.op, operand(expr.left), operand(expr.right))
            raise self.error(expr.pos, "Unexpected value in HAVING.")

        def convert(c: ast.Cond) -> HCond:
            if isinstance(c, (ast.And, ast.Or)):
                return HCond(
                    "and" if isinstance(c, ast.And) else "or", tuple(convert(i) for i in c.items)
                )
            if isinstance(c, ast.Not):
                return HCond("not", (convert(c.item),))
            if isinstance(c, ast.Compare):
                return HCond(c.op, (operand(c.left), operand(c.right)))
            if isinstance(c, ast.InList):
                return HCond("in", (operand(c.left), *[operand(v) for v in c.values]), c.negated)
            if isinstance(c, ast.Between):
                return HCond(
                    "between", (operand(c.left), operand(c.low), operand(c.high)), c.negated
                )
            if isinstance(c, ast.TextMatch):
                return HCond(c.kind, (operand(c.left), operand(c.value)), c.negated)
            assert isinstance(c, ast.IsNull)
            return HCond("null", (operand(c.left),), c.negated)

        try:
            return convert(cond)
        except _Fail:
            return None

    def order(
        self, columns: list[Column], time_col: Column | None, metrics: list[Column]
    ) -> list[tuple[str, bool]]:
        names = [c.name for c in columns]
        out = []
        for item in self.q.order_by:
            if item.name.name not in names:
                hint = did_you_mean(item.name.name, names)
                self.error(
                    item.name.pos,
                    f"ORDER BY names a result column; '{item.name.name}' is not one.{hint}",
                )
                continue
            out.append((item.name.name, item.descending))
        if out or self.q.order_by:
            return out
        # Default: along time, else the biggest first by the first metric.
        if time_col is not None:
            return [(next(c.name for c in columns if c.kind == "time"), False)]
        return [(metrics[0].name, True)] if metrics else []

    def limit(self) -> int:
        q = self.q
        if q.limit is None:
            return DEFAULT_LIMIT
        most = self.ctx.max_groups
        if q.limit < 1 or q.limit > most:
            self.error(
                q.clauses["LIMIT"],
                f"LIMIT must be between 1 and {most:,} (the most rows a query may return).",
            )
        return q.limit


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


def _renamed(col: Column, alias: str | None) -> Column:
    if not alias:
        return col
    return Column(
        alias,
        alias,
        col.type,
        col.role,
        col.kind,
        col.sql,
        col.expr,
        col.money,
        granularity=col.granularity,
        additive=col.additive,
    )


def _agg_type(func: str, field: Field) -> str:
    if func in ("count", "count_distinct"):
        return "number"
    return field.type if field.type in ("money", "number", "date", "percent") else "number"


def _arith_type(op: str, left: str, right: str) -> str:
    if op in ("+", "-"):
        return "money" if "money" in (left, right) else left
    if op == "*":
        return "money" if (left == "money") != (right == "money") else "number"
    return "money" if left == "money" and right != "money" else "number"


def _bad(point: ast.DatePoint, clock: Clock) -> bool:
    from warehouse.query.dates import resolve_point

    try:
        resolve_point(point, clock)
    except DateError:
        return True
    return False
