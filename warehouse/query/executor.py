"""Run a Plan on a DuckDB cursor: aggregate in SQL, finish in Python with exact decimals.

SQL filters, groups and aggregates (sums of decimals are exact there). Python then
evaluates metric expressions, fills TIMESERIES gaps, folds TOP n into "Other", aligns
comparisons, applies HAVING / ORDER BY / LIMIT and rounds money once, at the end.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any

import duckdb
import pyarrow as pa

from quarry.errors import MissingExchangeRate, QueryTimedOut
from warehouse.query import dates, kept_tables, rates
from warehouse.query.compiler import (
    Relations,
    aggregate_sql,
    candidates_sql,
    grouping_mask,
    key_sql,
    splits_sums,
)
from warehouse.query.deadline import WATCHDOG
from warehouse.query.diagnostics import START, Diagnostic, invalid_query
from warehouse.query.plan import (
    Arith,
    Column,
    Const,
    HArith,
    HCond,
    HValue,
    MetricExpr,
    PartRef,
    Plan,
)
from warehouse.query.result import (
    Derivation,
    QueryResult,
    bucket_value,
    dimension_value,
    metric_value,
)
from warehouse.query.sql import Sql
from warehouse.reader import cursor_variables
from warehouse.rollups.planner import FACTS_SOURCE, Choice
from warehouse.rollups.planner import choose as choose_source
from warehouse.sql_values import bind

logger = logging.getLogger("warehouse.query")

OTHER = "Other"
# Above this many days the factors' days come from the events instead of the calendar: a
# window may span millennia, and a row per calendar day and currency would then cost more
# than the one pass over the events that lists only the days that have some.
_CALENDAR_DAYS = 3_700


@dataclass(frozen=True)
class Limits:
    max_groups: int = 100_000  # estimated result rows before TIMESERIES fill
    timeout_seconds: float = 30.0
    rollups: bool = True  # answer from a rollup where one is exact (QUARRY_ROLLUPS)


Key = tuple[tuple[Any, ...], Any]  # (dimension values, bucket)


def source(plan: Plan, limits: Limits) -> Choice:
    """The plan to run and the table it reads: a rollup where one gives the facts' answer
    exactly (warehouse.rollups.planner), else the facts."""
    return choose_source(plan, enabled=limits.rollups)


def execute(
    cursor: duckdb.DuckDBPyConnection, plan: Plan, limits: Limits, choice: Choice | None = None
) -> QueryResult:
    """The result of `plan` on `cursor`, from `choice` (`source(plan, limits)` when None)."""
    choice = choice or source(plan, limits)
    try:
        result = _execute(cursor, choice.plan, limits)
    except duckdb.CatalogException as exc:
        # A cursor without the rollup tables (a warehouse read before they existed, a
        # test's tables): the facts answer.
        if choice.source == FACTS_SOURCE or choice.source not in str(exc):
            raise
        choice = Choice(plan, FACTS_SOURCE)
        result = _execute(cursor, plan, limits)
    result.source = "facts" if choice.source == FACTS_SOURCE else "rollup"
    result.source_table = choice.source if result.source == "rollup" else None
    logger.info("query answered from %s", choice.source, extra={"query_source": result.source})
    return result


def _execute(cursor: duckdb.DuckDBPyConnection, plan: Plan, limits: Limits) -> QueryResult:
    # The deadline comes first: registering the factors already scans the events.
    with _deadline(cursor, limits.timeout_seconds), _relations(cursor, plan) as rel:
        try:
            return _Run(cursor, plan, rel, limits).result()
        except duckdb.OutOfRangeException:
            if not (rel.names.fx and rel.names.split and splits_sums(plan)):
                raise
            # An amount too large for the factor's halves (fields.split_sum_sql): the
            # whole factor's 128-bit products, the same answer.
            logger.info("query rerun with whole exchange-rate factors")
            rel.names = replace(rel.names, split=False)
            return _Run(cursor, plan, rel, limits).result()


# ---- registered relations ----


class _Registered:
    """The relations a query reads beside the warehouse: the readable stores and the
    exchange-rate factors. On a reader's cursor both are tables the reader keeps
    (warehouse.query.kept_tables); elsewhere they are registered on the cursor under names
    nobody else uses, the stores by the first statement that names them (most queries
    never join them, and a registration and its removal cost about a millisecond)."""

    def __init__(self, cursor: duckdb.DuckDBPyConnection, plan: Plan) -> None:
        self.suffix = uuid.uuid4().hex[:12]
        self.cursor = cursor
        self.plan = plan
        self.names = Relations(f"quarry_query_stores_{self.suffix}", None)
        self.registered: list[str] = []
        self.stores_kept = False

    def stores_named_in(self, sql: str) -> None:
        """Register the readable stores if `sql` reads them and they are not yet."""
        name = self.names.stores
        if not self.stores_kept and name in sql and name not in self.registered:
            self.register(name, _stores_table(self.plan))

    def register(self, name: str, table: pa.Table) -> None:
        self.cursor.register(name, table)
        self.registered.append(name)


def _stores_table(plan: Plan) -> pa.Table:
    return pa.table(
        {
            "store_id": list(plan.stores),
            "name": [s.name for s in plan.stores.values()],
            "currency": [s.currency for s in plan.stores.values()],
            "timezone": [s.timezone for s in plan.stores.values()],
        },
        schema=pa.schema([(n, pa.string()) for n in ("store_id", "name", "currency", "timezone")]),
    )


@contextmanager
def _relations(cursor: duckdb.DuckDBPyConnection, plan: Plan) -> Iterator[_Registered]:
    """The query's relations (_Registered), removed from the cursor when it ends."""
    rel = _Registered(cursor, plan)
    try:
        with contextlib.ExitStack() as kept:
            reader, rates_source = cursor_variables(cursor)
            tables = kept_tables.of_reader(reader)
            if tables is not None:
                key = ("stores", tuple(plan.stores.items()))
                stores = kept.enter_context(tables.held(cursor, key, lambda: _stores_table(plan)))
                rel.names = Relations(stores, None)
                rel.stores_kept = True
            if plan.fx and any("f.factor" in p.sql for p in plan.parts):
                fx_name = None
                if tables is not None and rates_source is not None:
                    fx_name = kept.enter_context(_kept_factors(cursor, plan, tables, rates_source))
                if fx_name is None:
                    fx_name = f"quarry_query_fx_{rel.suffix}"
                    rel.register(fx_name, _factors(cursor, plan, rel))
                rel.names = Relations(rel.names.stores, fx_name)
            yield rel
    finally:
        for name in rel.registered:
            # An interrupted cursor refuses more work; its owner closes it.
            with contextlib.suppress(duckdb.Error):
                cursor.unregister(name)


@contextmanager
def _kept_factors(
    cursor: duckdb.DuckDBPyConnection,
    plan: Plan,
    tables: kept_tables.KeptTables,
    rates_source: str,
) -> Iterator[str | None]:
    """The table of the reader's factors for the windows' calendar days (rates.kept_factors),
    or None: no stores, windows too long to list their days."""
    ranges = _calendar_days(plan) if plan.store_ids else None
    if ranges is None:
        yield None
        return
    currencies = {plan.stores[s].currency for s in plan.store_ids if s in plan.stores}
    with rates.kept_factors(
        cursor, tables, rates_source, currencies, plan.currency, ranges
    ) as name:
        yield name


def _factors(cursor: duckdb.DuckDBPyConnection, plan: Plan, rel: _Registered) -> pa.Table:
    """Per currency and day, the factor that converts an amount to the query currency
    (rates.factor_table). The days listed cover every event of the query's windows; a day
    listed without events costs nothing, a day missing would read as a missing rate."""
    if not plan.store_ids:
        return rates.factors_of([], plan.currency)
    ranges = _calendar_days(plan)
    if ranges is not None:
        currencies = {plan.stores[s].currency for s in plan.store_ids if s in plan.stores}
        return rates.factor_table(cursor, currencies, plan.currency, ranges)
    sql, params = _event_rates_sql(plan, rel.names.stores)
    rel.stores_named_in(sql)
    return rates.factors_of(cursor.execute(bind(sql, params)).fetchall(), plan.currency)


def _calendar_days(plan: Plan) -> list[tuple[date, date]] | None:
    """The windows' days as (first, last) ranges, wide enough for any store's zone: an
    instant's local date is at most one day from its UTC date. None when they add up to
    more than _CALENDAR_DAYS (the events then list the days)."""
    ranges = []
    for w in [plan.window, *(c.window for c in plan.comparisons)]:
        first, last = w.gte.date(), w.lt.date()
        # One day either side, short of the calendar's ends (Python's dates stop there).
        first = first - timedelta(days=1) if first > date.min else first
        last = last + timedelta(days=1) if last < date.max else last
        ranges.append((first, last))
    if sum((b - a).days + 1 for a, b in ranges) > _CALENDAR_DAYS:
        return None
    return ranges


def _event_rates_sql(plan: Plan, stores: str) -> tuple[str, list[Any]]:
    """(currency, date, rate of currency, rate of the query currency) for the days that
    have events in the windows (for a window too long to list its calendar days), the
    latest rate on or before each day, in SQL. The aggregate queries join them on
    plan.fx_date_sql."""
    ids = Sql.join(", ", [Sql.param(s) for s in plan.store_ids])
    t = plan.source
    time_col = f"t.{t.time_column}"
    windows = [plan.window, *(c.window for c in plan.comparisons)]
    within = Sql.join(
        " OR ",
        [
            Sql(f"({time_col} >= ")
            + Sql.param(w.gte)
            + f" AND {time_col} < "
            + Sql.param(w.lt)
            + ")"
            for w in windows
        ],
    )
    days = (
        Sql(
            f"SELECT DISTINCT t.currency, {plan.fx_date_sql} AS date "
            f"FROM {t.table} t JOIN {stores} s ON s.store_id = t.store_id "
            "WHERE t.store_id IN ("
        )
        + ids
        + ") AND ("
        + within
        + ")"
    )
    # The latest rate on or before each day, carried forward by a window over the rates
    # and the days sorted together (a rate sorts before a day of the same date). DuckDB's
    # ASOF join gave the same rows ten times slower against the whole rate history.
    sql = (
        "WITH days AS ("
        + days
        + "), usd AS (SELECT currency, date, rate FROM exchange_rates WHERE base = 'USD' "
        "AND date <= (SELECT max(date) FROM days)), "
        "theirs AS (SELECT currency, date, is_day, last_value(rate IGNORE NULLS) OVER "
        "(PARTITION BY currency ORDER BY date, is_day ROWS UNBOUNDED PRECEDING) AS rate FROM "
        "(SELECT currency, date, rate, 0 AS is_day FROM usd "
        "WHERE currency IN (SELECT currency FROM days) "
        "UNION ALL SELECT currency, date, NULL, 1 FROM days)), "
        "mine AS (SELECT date, is_day, last_value(rate IGNORE NULLS) OVER "
        "(ORDER BY date, is_day ROWS UNBOUNDED PRECEDING) AS rate FROM "
        "(SELECT date, rate, 0 AS is_day FROM usd WHERE currency = "
        + Sql.param(plan.currency)
        + " UNION ALL SELECT DISTINCT date, NULL, 1 FROM days)) "
        "SELECT d.currency, d.date, t.rate, m.rate FROM days d "
        "JOIN theirs t ON t.is_day = 1 AND t.currency = d.currency AND t.date = d.date "
        "JOIN mine m ON m.is_day = 1 AND m.date = d.date"
    )
    return sql.text, list(sql.params)


@contextmanager
def _deadline(cursor: duckdb.DuckDBPyConnection, seconds: float) -> Iterator[None]:
    """Interrupt the cursor when the time is up; the interrupted query raises."""
    entry = WATCHDOG.watch(seconds, cursor.interrupt)
    try:
        yield
    except duckdb.InterruptException as exc:
        raise QueryTimedOut(
            detail=f"The query timed out: it ran past the {seconds:g} s time limit."
        ) from exc
    finally:
        WATCHDOG.cancel(entry)


# ---- one query run ----


class _Run:
    def __init__(
        self, cursor: duckdb.DuckDBPyConnection, plan: Plan, rel: _Registered, limits: Limits
    ) -> None:
        self.cursor = cursor
        self.plan = plan
        self.registered = rel
        self.rel = rel.names
        self.limits = limits
        self.all_dims = list(range(len(plan.dims)))
        # TOP's choice, made once over the main window: its values (ranked over every
        # group), or the keys (compiler.key_sql) of the groups chosen within the
        # dimensions before it.
        self.top_values: tuple[Any, ...] | None = None
        self.top_keys: list[list[str | None]] | None = None
        self.top_rows: dict[Key, list[Any]] | None = None
        self.group_count: int | None = None  # all groups, when the page is cut in SQL
        # Totals read in the same pass as the groups (GROUPING SETS), by window: the grand
        # total's parts, and each GROUP_TOTALS level's parts by (dimension prefix, bucket).
        self.grand: dict[dates.Window, list[Any]] = {}
        self.level_parts: dict[dates.Window, dict[int, dict[Key, list[Any]]]] = {}

    def fetch(self, sql: Sql, limited: bool = False) -> list[tuple[Any, ...]]:
        """The rows of an aggregate query. limited: at most max_groups of them, or the
        query is refused; one row more than that is all that is read to know it."""
        self.registered.stores_named_in(sql.text)
        cursor = self.cursor.execute(sql.inline())
        if limited:
            rows = cursor.fetchmany(self.limits.max_groups + 1)
            if len(rows) > self.limits.max_groups:
                self.too_large(None)
        else:
            rows = cursor.fetchall()
        if rows and sum(int(r[-1] or 0) for r in rows):
            self.missing_rate()
        return rows

    def fetch_candidates(self, sql: Sql) -> tuple[int, list[tuple[Any, ...]]]:
        """(number of groups, candidate rows without the two leading counts) of a
        compiler.candidates_sql query."""
        self.registered.stores_named_in(sql.text)
        rows = self.cursor.execute(sql.inline()).fetchall()
        if rows and int(rows[0][1] or 0):
            self.missing_rate()
        return (int(rows[0][0]) if rows else 0), [r[2:] for r in rows]

    def missing_rate(self) -> None:
        raise MissingExchangeRate(
            detail=f"No exchange rate to {self.plan.currency} on or before the date of "
            "some rows: load exchange_rates for their currency and dates."
        )

    def result(self) -> QueryResult:
        plan = self.plan
        self.check_buckets()
        main = self.grouped(self.page_window())
        compared = [(c, self.grouped(c.window)) for c in plan.comparisons]
        start = plan.offset
        end = start + plan.limit
        if self.pages_in_time_order():
            rows, count = self.filled_page(main, compared, end + 1)
        else:
            rows = self.rows(main, compared)
            rows = [r for r in rows if plan.having is None or _holds(plan.having, r[1])]
            rows.sort(key=self.sort_key)
            # Pushed down, the rows are only the candidates for the page; the count is SQL's.
            count = self.group_count if self.group_count is not None else len(rows)
        truncated = not plan.limit_explicit and count > end
        page = rows[start:end]
        remainders = {}
        if plan.top is not None:
            top = plan.top.dim
            folded = plan.dims[top].name
            remainders = {i: folded for i, (key, _) in enumerate(page) if key[0][top] == OTHER}
        return QueryResult(
            columns=[c.public() for c in plan.columns],
            rows=[values for _, values in page],
            currency=plan.currency,
            time_zone=plan.zone_name,
            window=plan.window.public(),
            totals=self.totals() if plan.totals else None,
            truncated=truncated,
            derived=self.derivations(),
            remainders=remainders,
        )

    def derivations(self) -> dict[str, Derivation]:
        plan = self.plan
        time = [plan.time.name] if plan.time is not None else []
        dims = [d.name for d in plan.dims]
        return {
            c.name: Derivation(
                c.kind,
                c.base,
                c.comparison,
                tuple(dims[: c.level + 1] + time if c.level is not None else dims + time),
            )
            for c in plan.columns
            if c.base is not None
        }

    # ---- size ----

    def check_buckets(self) -> None:
        """A TIMESERIES with more buckets than a query may return is refused before any
        query runs; the groups are counted as the aggregate is read (fetch, filled)."""
        plan = self.plan
        if plan.granularity is not None:
            # Counted, not listed: listing is what a too-long window must not reach.
            count = dates.bucket_count(plan.granularity, plan.window, plan.clock)
            if count > self.limits.max_groups:
                self.too_large(count)

    def too_large(self, estimate: int | None) -> None:
        """estimate: the rows the result would have, or None when only known to be more
        than max_groups (the aggregate is read no further than that)."""
        most = self.limits.max_groups
        size = (
            f"about {estimate:,} rows, more than the {most:,}"
            if estimate is not None
            else f"more than the {most:,} rows"
        )
        raise invalid_query(
            [
                Diagnostic(
                    self.plan.group_pos or START,
                    f"The result would have {size} a query may return: narrow the window, "
                    "filter with WHERE, use TOP n, or export the records instead.",
                )
            ]
        )

    # ---- aggregation ----

    def pushdown(self) -> tuple[int, bool] | None:
        """(part, descending) when the first ORDER BY column is a plain aggregate and the
        page can be cut in SQL: no TOP, TIMESERIES, comparison or HAVING, which all need
        every group in Python."""
        plan = self.plan
        if (
            plan.top is not None
            or plan.granularity is not None
            or plan.comparisons
            or plan.having is not None
            or not plan.order
            or not plan.dims
            or self.rolls_up()
        ):
            return None
        name, descending = plan.order[0]
        col = next(c for c in plan.columns if c.name == name)
        # Dates (min/max of a date field) are compared in Python as they come; only
        # numbers are sure to order alike in DuckDB and in Python decimals.
        if (
            col.kind != "metric"
            or not isinstance(col.expr, PartRef)
            or col.type not in ("money", "number")
        ):
            return None
        return col.expr.index, descending

    def grouped(self, window: dates.Window) -> dict[Key, list[Any]]:
        """Aggregates per (dims, bucket) in one window, with TOP n folded into Other."""
        plan = self.plan
        with_time = plan.granularity is not None
        top = plan.top
        if top is None and self.rolls_up():
            return self.rolled_up(window, with_time)
        if top is None:
            base = aggregate_sql(
                plan, window, self.rel, group_dims=self.all_dims, with_time=with_time
            )
            pushed = self.pushdown() if window is plan.window else None
            if pushed is not None:
                part, descending = pushed
                # Rows are rounded before they are sorted: see candidates_sql.
                col = next(c for c in plan.columns if c.name == plan.order[0][0])
                margin = Decimal(1) if col.type == "money" else Decimal("0.01")
                count, rows = self.fetch_candidates(
                    candidates_sql(base, part, plan.offset + plan.limit, descending, margin)
                )
                if count > self.limits.max_groups:
                    self.too_large(count)
                self.group_count = count
                return self.keyed(rows, self.all_dims, with_time)
            rows = self.fetch(base, limited=window is plan.window)
            return self.checked(self.keyed(rows, self.all_dims, with_time))
        if self.top_values is None and self.top_keys is None:  # ranked once, over the main window
            self.rank(window)
        if self.top_rows is not None and not with_time and window is plan.window:
            # TOP over the groups it ranks: the ranking query already has them.
            out = self.top_rows
            if not top.only:
                self.add_others(out, self.others(window, self.all_dims, with_time))
        elif top.only:
            rows = self.fetch(
                aggregate_sql(
                    plan,
                    window,
                    self.rel,
                    group_dims=self.all_dims,
                    with_time=with_time,
                    **self.top_filter(keep=True),
                ),
                limited=window is plan.window,
            )
            out = self.keyed(rows, self.all_dims, with_time)
        else:
            out = self.folded(window, with_time)
        if window is plan.window and plan.group_total_levels:
            self.level_parts[window] = self.top_levels(window, with_time)
        return self.checked(out) if window is plan.window else out

    def top_filter(self, keep: bool) -> dict[str, Any]:
        """aggregate_sql's arguments that keep the rows of TOP's chosen groups, or (keep
        false) the rest, which fold into Other."""
        top = self.plan.top
        assert top is not None
        if top.within:
            assert self.top_keys is not None
            return {"keys": ([*top.within, top.dim], self.top_keys, keep)}
        assert self.top_values is not None
        return {"include" if keep else "exclude": (top.dim, self.top_values)}

    def folded(self, window: dates.Window, with_time: bool) -> dict[Key, list[Any]]:
        """TOP's chosen groups and its Other rows from one aggregate query (aggregate_sql's
        fold): one scan of the window where a query for each would read it twice. Other
        is still aggregated over its own rows, so a distinct count or median of it is
        real."""
        plan, top = self.plan, self.plan.top
        assert top is not None and self.top_keys is not None
        sql = aggregate_sql(
            plan,
            window,
            self.rel,
            group_dims=self.all_dims,
            with_time=with_time,
            fold=(top.dim, [*top.within, top.dim], self.top_keys),
        )
        at = self.all_dims.index(top.dim)
        chosen, other = [], []
        for row in self.fetch(sql, limited=window is plan.window):
            values = row[:-2] + row[-1:]  # without quarry_other
            if row[-2]:
                other.append((*values[:at], OTHER, *values[at + 1 :]))
            else:
                chosen.append(values)
        out = self.keyed(chosen, self.all_dims, with_time)
        self.add_others(out, self.keyed(other, self.all_dims, with_time))
        return out

    def add_others(self, out: dict[Key, list[Any]], others: dict[Key, list[Any]]) -> None:
        """Other's rows into `out`: those with a figure, or all of them when gaps are
        filled."""
        for key, parts in others.items():
            if any(p is not None and p != 0 for p in parts) or self.plan.fill:
                out[key] = parts

    def others(
        self, window: dates.Window, dims_: list[int], with_time: bool
    ) -> dict[Key, list[Any]]:
        """TOP's Other rows grouped by `dims_` (which hold TOP's dimension): aggregated by
        the engine over the rows not chosen, so a distinct count or median of Other is real."""
        top = self.plan.top
        assert top is not None
        rest = [k for k in dims_ if k != top.dim]
        sql = aggregate_sql(
            self.plan,
            window,
            self.rel,
            group_dims=rest,
            with_time=with_time,
            **self.top_filter(keep=False),
        )
        out = {}
        for (values, bucket), parts in self.keyed(
            self.fetch(sql, limited=window is self.plan.window), rest, with_time
        ).items():
            full = list(values)
            full.insert(dims_.index(top.dim), OTHER)
            out[(tuple(full), bucket)] = parts
        return out

    def top_levels(self, window: dates.Window, with_time: bool) -> dict[int, dict[Key, list[Any]]]:
        """WITH GROUP_TOTALS beside TOP: each level's totals by (dimension prefix, bucket).
        A prefix before TOP's dimension totals every row of its values, the rows folded
        into Other included; a prefix that holds TOP's dimension totals each chosen value
        and, apart, Other's rows."""
        plan = self.plan
        top = plan.top
        assert top is not None
        levels: dict[int, dict[Key, list[Any]]] = {}
        for level in plan.group_total_levels:
            kept = list(range(level + 1))
            chosen = self.top_filter(keep=True) if top.dim in kept else {}
            sql = aggregate_sql(
                plan, window, self.rel, group_dims=kept, with_time=with_time, **chosen
            )
            levels[level] = self.keyed(self.fetch(sql), kept, with_time)
            if top.dim in kept and not top.only:
                levels[level].update(self.others(window, kept, with_time))
        return levels

    def rolls_up(self) -> bool:
        """Are totals read with the groups (GROUPING SETS)? For WITH TOTALS and
        GROUP_TOTALS of a grouped query without TOP (whose Other row needs the ranking)."""
        plan = self.plan
        grouped = bool(plan.dims) or plan.granularity is not None
        return plan.top is None and grouped and (plan.totals or bool(plan.group_total_levels))

    def rolled_up(self, window: dates.Window, with_time: bool) -> dict[Key, list[Any]]:
        """The window's groups, its grand total and its GROUP_TOTALS levels from one
        aggregate query: DuckDB computes every grouping set in the same scan."""
        plan = self.plan
        width = len(self.all_dims) + (1 if with_time else 0)
        bucket = [width - 1] if with_time else []
        detail = list(range(width))
        sets: dict[int, tuple[str, int | None]] = {grouping_mask(detail, width): ("rows", None)}
        for level in plan.group_total_levels:
            kept = list(range(level + 1)) + bucket
            sets.setdefault(grouping_mask(kept, width), ("level", level))
        if plan.totals:
            sets.setdefault(grouping_mask([], width), ("grand", None))
        kept_sets = [
            list(range(width))
            if kind == "rows"
            else (list(range((level or 0) + 1)) + bucket if kind == "level" else [])
            for kind, level in sets.values()
        ]
        sql = aggregate_sql(
            plan,
            window,
            self.rel,
            group_dims=self.all_dims,
            with_time=with_time,
            grouping_sets=kept_sets,
        )
        rows = self.fetch(sql, limited=window is plan.window)
        detail_rows: list[tuple[Any, ...]] = []
        levels: dict[int, dict[Key, list[Any]]] = {}
        for row in rows:
            kind, row_level = sets[int(row[-2])]
            row = row[:-2] + row[-1:]  # without the grouping mask
            if kind == "rows":
                detail_rows.append(row)
            elif kind == "grand":
                self.grand[window] = self.parts_of(row[width:-1])
            else:
                assert row_level is not None
                keyed = self.keyed([row], self.all_dims, with_time)
                ((dims_, b), parts) = next(iter(keyed.items()))
                levels.setdefault(row_level, {})[(dims_[: row_level + 1], b)] = parts
        if plan.totals and window not in self.grand:
            self.grand[window] = self.empty_parts()  # no rows at all in the window
        self.level_parts[window] = levels
        groups = self.keyed(detail_rows, self.all_dims, with_time)
        return self.checked(groups) if window is plan.window else groups

    def checked(self, groups: dict[Key, list[Any]]) -> dict[Key, list[Any]]:
        """The main window's groups, refused when they (or, with TIMESERIES, every bucket
        of every group seen) are more than a query may return."""
        plan = self.plan
        count = len(groups)
        if plan.fill and plan.granularity is not None:
            combos = len({k[0] for k in groups}) or 1
            count = combos * dates.bucket_count(plan.granularity, plan.window, plan.clock)
        if count > self.limits.max_groups:
            self.too_large(count)
        return groups

    def rank(self, window: dates.Window) -> None:
        """Choose TOP's groups: the n values of its dimension with the largest first metric
        over the window, within each group of the dimensions before it (over every group
        with OVERALL). With a plain aggregate as first metric only the candidates leave
        SQL; when the ranked dimensions are all the groups and there is no time column,
        their rows are the result's (kept in top_rows)."""
        plan = self.plan
        top = plan.top
        assert top is not None
        ranked = [*top.within, top.dim]
        width, count = len(ranked), len(plan.parts)
        metric = plan.metric_columns[0].expr if plan.metric_columns else None
        base = aggregate_sql(plan, window, self.rel, group_dims=ranked, with_time=False)
        # Each group's key as the filters and the fold that follow compute it from the rows.
        key = key_sql([f"g.d{k}" for k in ranked])
        base = (
            Sql("SELECT g.* EXCLUDE (missing_fx), ")
            + f"{key} AS quarry_k, g.missing_fx FROM ("
            + base
            + ") g"
        )
        if isinstance(metric, PartRef) and plan.metric_columns[0].type in ("money", "number"):
            # Ranked on unrounded values: only exact ties with the n-th need keeping.
            _, rows = self.fetch_candidates(
                candidates_sql(
                    base,
                    metric.index,
                    top.n,
                    descending=True,
                    within=[f"d{k}" for k in top.within],
                )
            )
        else:
            rows = self.fetch(base)
        groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
        for row in rows:
            parts = self.parts_of(row[width : width + count])
            score = _rank(_evaluate(metric, parts)) if metric is not None else None
            entry = (score is None, -(score or 0), str(row[width - 1]), row, parts)
            groups.setdefault(tuple(row[: width - 1]), []).append(entry)
        chosen = []
        for entries in groups.values():
            entries.sort(key=lambda e: e[:3])
            chosen.extend(entries[: top.n])
        self.top_keys = [list(e[3][width + count]) for e in chosen]
        if not top.within:
            self.top_values = tuple(e[3][width - 1] for e in chosen)
        if plan.granularity is None and ranked == self.all_dims:
            self.top_rows = {(tuple(e[3][:width]), None): e[4] for e in chosen}

    def keyed(
        self, rows: list[tuple[Any, ...]], dims_: list[int], with_time: bool
    ) -> dict[Key, list[Any]]:
        out: dict[Key, list[Any]] = {}
        width = len(dims_) + (1 if with_time else 0)
        for row in rows:
            dims_values = tuple(row[: len(dims_)])
            bucket = row[len(dims_)] if with_time else None
            out[(dims_values, bucket)] = self.parts_of(row[width:-1])
        return out

    def parts_of(self, values: tuple[Any, ...]) -> list[Any]:
        """SQL values as decimals (a date's least or greatest value stays a date); sums
        and counts over no rows are 0."""
        out: list[Any] = []
        for part, value in zip(self.plan.parts, values, strict=True):
            if value is None:
                out.append(part.empty)
            else:
                out.append(value if isinstance(value, (Decimal, date)) else _decimal(value))
        return out

    def empty_parts(self) -> list[Any]:
        return [p.empty for p in self.plan.parts]

    # ---- rows ----

    def align(self, window: dates.Window, key: Key) -> Key:
        """Comparison rows meet current rows at the same position in their window's bucket
        sequence (day 3 of this week with day 3 of last week)."""
        g = self.plan.granularity
        if g is None or g in ("hour_of_day", "day_of_week", "month_of_year"):
            return key
        # By arithmetic: a comparison window is not bounded by the size check, and
        # listing its buckets could mean millions of hours.
        return key[0], dates.bucket_position(g, window, key[1], self.plan.clock)

    def rows(
        self, main: dict[Key, list[Any]], compared: list[tuple[Any, dict[Key, list[Any]]]]
    ) -> list[tuple[Key, dict[str, Any]]]:
        plan = self.plan
        if plan.fill:
            main = self.filled(main, plan.window)
        aligned = self.aligned(compared)
        running: dict[tuple[tuple[Any, ...], str], Decimal] = {}
        return [
            (key, self.row(key, parts, aligned, running))
            for key, parts in sorted(main.items(), key=lambda item: self.time_order(item[0]))
        ]

    def pages_in_time_order(self) -> bool:
        """Is the result a TIMESERIES in time order (its default order)? Its rows then come
        bucket by bucket, and a page needs only the buckets it shows: filled_page."""
        plan = self.plan
        return (
            plan.fill
            and plan.time is not None
            and plan.granularity not in dates.CYCLIC_GRANULARITIES
            and plan.order == [(plan.time.name, False)]
        )

    def page_window(self) -> dates.Window:
        """The window the main groups are read over: the query's, or for a series without
        dimensions paged in time order (each bucket one row), the part its page's buckets
        cover. Not with dimensions (every group seen anywhere in the window gets a row in
        every bucket), TOP (ranked over the whole window), totals (read with the groups)
        or HAVING (which may drop buckets, so the page can reach further)."""
        plan = self.plan
        if (
            not self.pages_in_time_order()
            or plan.dims
            or plan.top is not None
            or plan.having is not None
            or self.rolls_up()
        ):
            return plan.window
        assert plan.granularity is not None
        shown = plan.offset + plan.limit + 1  # one more: is the result truncated?
        return dates.first_buckets(plan.granularity, plan.window, plan.clock, shown)

    def filled_page(
        self,
        main: dict[Key, list[Any]],
        compared: list[tuple[Any, dict[Key, list[Any]]]],
        wanted: int,
    ) -> tuple[list[tuple[Key, dict[str, Any]]], int]:
        """The first `wanted` rows of a TIMESERIES in time order (HAVING applied), and the
        number of rows of the whole result, or of those listed when HAVING filters them.

        The rows are what sort_key orders: by bucket, then Other last, then the groups'
        text; a filled empty bucket is a row like any other, so a page of a long series
        costs the buckets it shows, not the window's (43,200 minutes in 30 days)."""
        plan = self.plan
        assert plan.granularity is not None
        top = plan.top.dim if plan.top is not None else None
        combos = sorted(
            {k[0] for k in main} or ({()} if not plan.dims else set()),
            key=lambda c: (top is not None and c[top] == OTHER, tuple(str(v) for v in c)),
        )
        by_key = {(k[0], _bucket_key(k[1])): v for k, v in main.items()}
        aligned = self.aligned(compared)
        running: dict[tuple[tuple[Any, ...], str], Decimal] = {}
        out: list[tuple[Key, dict[str, Any]]] = []
        for bucket in dates.iter_buckets(plan.granularity, plan.window, plan.clock):
            if len(out) >= wanted:
                break
            for combo in combos:
                parts = by_key.get((combo, _bucket_key(bucket))) or self.empty_parts()
                key = (combo, bucket)
                values = self.row(key, parts, aligned, running)
                if plan.having is None or _holds(plan.having, values):
                    out.append((key, values))
        if plan.having is not None:
            return out, len(out)
        return out, len(combos) * dates.bucket_count(plan.granularity, plan.window, plan.clock)

    def aligned(
        self, compared: list[tuple[Any, dict[Key, list[Any]]]]
    ) -> list[tuple[str, dict[Key, list[Any]]]]:
        """Each comparison's groups by their position in its window (see align)."""
        out = []
        for comparison, groups in compared:
            index = {}
            for key, parts in groups.items():
                try:
                    index[self.align(comparison.window, key)] = parts
                except KeyError:
                    continue
            out.append((comparison.name, index))
        return out

    def row(
        self,
        key: Key,
        parts: list[Any],
        aligned: list[tuple[str, dict[Key, list[Any]]]],
        running: dict[tuple[tuple[Any, ...], str], Decimal],
    ) -> dict[str, Any]:
        """One result row's values. `running` carries the running totals (CUMULATIVE_VALUES)
        from the group's earlier buckets: rows come in time order within each group."""
        plan = self.plan
        levels = self.level_parts.get(plan.window, {})
        values: dict[str, Any] = {}
        raw: dict[str, Decimal | date | None] = {}
        for col in plan.columns:
            if col.kind == "time":
                values[col.name] = bucket_value(plan.granularity or "", key[1], plan.zone)
            elif col.kind == "dim":
                value = key[0][plan.dims.index(_base(col, plan))]
                values[col.name] = (
                    bucket_value(col.granularity, value, plan.zone)
                    if col.granularity
                    else dimension_value(value)
                )
            elif col.kind == "metric":
                raw[col.name] = _evaluate(col.expr, parts)
                values[col.name] = metric_value(raw[col.name], col.type, plan.currency)
            elif col.kind == "group_total":
                assert col.level is not None
                group = (key[0][: col.level + 1], key[1])
                total = levels.get(col.level, {}).get(group) or self.empty_parts()
                values[col.name] = metric_value(_evaluate(col.expr, total), col.type, plan.currency)
            elif col.kind == "cumulative":
                # A running total along time within the group: the exact sum so far,
                # rounded once like any figure.
                series = (key[0], col.name)
                step = raw.get(col.base or "")  # additive: a sum or a count, never a date
                running[series] = running.get(series, Decimal(0)) + (
                    step if isinstance(step, Decimal) else Decimal(0)
                )
                values[col.name] = metric_value(running[series], col.type, plan.currency)
        for name, index in aligned:
            try:
                cparts = index.get(self.align(plan.window, key)) or self.empty_parts()
            except KeyError:
                cparts = self.empty_parts()
            self.comparison_values(values, raw, cparts, name)
        return values

    def time_order(self, key: Key) -> tuple[Any, ...]:
        """Groups in time order (for running totals): by group, then bucket."""
        return (tuple(str(v) for v in key[0]), _Sortable(_bucket_sort(self.plan, key[1]), False))

    def comparison_values(
        self, values: dict[str, Any], raw: dict[str, Any], cparts: list[Any], name: str
    ) -> None:
        plan = self.plan
        for col in plan.columns:
            if col.comparison != name:
                continue
            if col.kind == "comparison":
                value = _evaluate(col.expr, cparts)
                raw[col.name] = value
                values[col.name] = metric_value(value, col.type, plan.currency)
            elif col.kind == "percent":
                current = raw.get(col.base or "")
                before = _evaluate(_metric(plan, col.base), cparts)
                values[col.name] = _percent(current, before)

    def filled(self, groups: dict[Key, list[Any]], window: dates.Window) -> dict[Key, list[Any]]:
        """Every bucket of the window for every group seen (or the one group of a query
        without dimensions): sums and counts 0, the rest null."""
        plan = self.plan
        assert plan.granularity is not None
        seq = dates.buckets(plan.granularity, window, plan.clock)
        combos = sorted({k[0] for k in groups}, key=str) or ([()] if not plan.dims else [])
        by_key = {(k[0], _bucket_key(k[1])): v for k, v in groups.items()}
        out: dict[Key, list[Any]] = {}
        for combo in combos:
            for bucket in seq:
                parts = by_key.get((combo, _bucket_key(bucket)))
                out[(combo, bucket)] = parts if parts is not None else self.empty_parts()
        return out

    def sort_key(self, item: tuple[Key, dict[str, Any]]) -> tuple[Any, ...]:
        key, values = item
        plan = self.plan
        parts: list[Any] = []
        is_other = plan.top is not None and key[0][plan.top.dim] == OTHER
        if plan.top is not None and plan.time is not None:
            parts.append(_Sortable(_bucket_sort(plan, key[1]), False))
        parts.append(is_other)
        for name, descending in plan.order:
            col = next(c for c in plan.columns if c.name == name)
            value = _bucket_sort(plan, key[1]) if col.kind == "time" else values.get(name)
            parts.append(_Sortable(value, descending))
        parts.append(tuple(str(v) for v in key[0]))
        return tuple(parts)

    # ---- totals ----

    def totals(self) -> dict[str, Any]:
        """Totals over the same filters, computed by the engine: a distinct count or a
        median total is the real figure, never a sum of the rows."""
        plan = self.plan
        windows = {"": plan.window} | {c.name: c.window for c in plan.comparisons}
        parts = {}
        for name, window in windows.items():
            if window in self.grand:  # read with the groups, in the same pass
                parts[name] = self.grand[window]
                continue
            rows = self.fetch(aggregate_sql(plan, window, self.rel, group_dims=[], with_time=False))
            parts[name] = self.parts_of(rows[0][:-1]) if rows else self.empty_parts()
        out: dict[str, Any] = {}
        raw: dict[str, Any] = {}
        for col in plan.columns:
            if col.kind == "metric":
                raw[col.name] = _evaluate(col.expr, parts[""])
                out[col.name] = metric_value(raw[col.name], col.type, plan.currency)
        for c in plan.comparisons:
            self.comparison_values(out, raw, parts[c.name], c.name)
        return out


# ---- helpers ----


def _decimal(value: Any) -> Decimal:
    try:
        return Decimal(str(value)) if not isinstance(value, int) else Decimal(value)
    except InvalidOperation:
        return Decimal(0)


def _evaluate(expr: MetricExpr | None, parts: list[Any]) -> Decimal | date | None:
    if expr is None:
        return None
    if isinstance(expr, Const):
        return expr.value
    if isinstance(expr, Arith):
        left, right = _evaluate(expr.left, parts), _evaluate(expr.right, parts)
        # A null side makes null; a date never gets here (the checker refuses arithmetic
        # on dates).
        if not isinstance(left, Decimal) or not isinstance(right, Decimal):
            return None
        if expr.op == "/":
            return None if right == 0 else _div(left, right)
        return {"+": left + right, "-": left - right, "*": left * right}[expr.op]
    value = parts[expr.index]
    if value is None or isinstance(value, (Decimal, date)):
        return value
    return _decimal(value)


def _div(left: Decimal, right: Decimal) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 34
        return left / right


def _rank(value: Decimal | date | None) -> Decimal | None:
    """A metric's value as TOP ranks it: a date by its time, the latest first."""
    if isinstance(value, datetime):
        return Decimal(str(value.timestamp()))
    if isinstance(value, date):
        return Decimal(value.toordinal())
    return value


def _percent(current: Any, before: Any) -> Decimal | None:
    if not isinstance(current, Decimal) or not isinstance(before, Decimal) or before == 0:
        return None
    return metric_value(_div((current - before) * 100, abs(before)), "percent", "")


def _metric(plan: Plan, name: str | None) -> MetricExpr | None:
    return next((c.expr for c in plan.columns if c.name == name and c.kind == "metric"), None)


def _base(col: Column, plan: Plan) -> Column:
    """The grouped dimension a shown (maybe renamed) dimension column stands for."""
    return next(d for d in plan.dims if d.sql == col.sql)


def _bucket_key(bucket: Any) -> Any:
    if isinstance(bucket, datetime) and bucket.tzinfo is not None:
        return bucket.timestamp()
    if isinstance(bucket, datetime):
        return bucket.date()
    return bucket


def _bucket_sort(plan: Plan, bucket: Any) -> Any:
    if plan.granularity == "day_of_week" and bucket is not None:
        return (int(bucket) - 1 - plan.clock.week_start) % 7
    return _bucket_key(bucket)


class _Sortable:
    """A sort key part: nulls last in either direction, descending without negation."""

    def __init__(self, value: Any, descending: bool) -> None:
        self.value = value
        self.descending = descending

    def __lt__(self, other: _Sortable) -> bool:
        if self.value is None or other.value is None:
            return self.value is not None and other.value is None
        if self.value == other.value:
            return False
        try:
            less = self.value < other.value
        except TypeError:
            less = str(self.value) < str(other.value)
        return not less if self.descending else less

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Sortable) and self.value == other.value

    __hash__ = None  # type: ignore[assignment]


def _holds(cond: HCond, row: dict[str, Any]) -> bool:
    """HAVING on a finished row; a comparison with null is false, as in SQL."""
    op = cond.op
    if op == "and":
        return all(_holds(c, row) for c in cond.operands)
    if op == "or":
        return any(_holds(c, row) for c in cond.operands)
    if op == "not":
        return not _holds(cond.operands[0], row)
    values = [_operand(o, row) for o in cond.operands]
    if op == "null":
        return (values[0] is None) != cond.negated
    if any(v is None for v in values):
        return False
    first = values[0]
    if op == "in":
        result = first in values[1:]
    elif op == "between":
        result = values[1] <= first <= values[2]
    elif op in ("starts", "ends", "contains"):
        a, b = str(first).lower(), str(values[1]).lower()
        result = a.startswith(b) if op == "starts" else a.endswith(b) if op == "ends" else b in a
    else:
        result = {
            "=": first == values[1],
            "!=": first != values[1],
            "<": first < values[1],
            "<=": first <= values[1],
            ">": first > values[1],
            ">=": first >= values[1],
        }[op]
    return result != cond.negated


def _operand(op: Any, row: dict[str, Any]) -> Any:
    if isinstance(op, HValue):
        if op.column is not None:
            value = row.get(op.column)
            return (
                Decimal(value) if isinstance(value, int) and not isinstance(value, bool) else value
            )
        return op.const
    assert isinstance(op, HArith)
    left, right = _operand(op.left, row), _operand(op.right, row)
    if left is None or right is None:
        return None
    if op.op == "/":
        return None if right == 0 else _div(Decimal(left), Decimal(right))
    return {"+": left + right, "-": left - right, "*": left * right}[op.op]
