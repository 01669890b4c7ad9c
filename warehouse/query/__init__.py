"""The query language: parse, check, compile, execute.

    result = run_query(cursor, "FROM sales SHOW total_sales TIMESERIES day", stores=...,
                       account_currency="USD", account_timezone="America/New_York")

`cursor` is a DuckDB cursor where each warehouse table is readable by its plain name (what
WarehouseReader.connect gives). See docs/query-language.md for the language.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime

import duckdb

from warehouse.query.executor import Limits, execute
from warehouse.query.plan import Plan, StoreInfo
from warehouse.query.result import QueryResult
from warehouse.query.service import MAX_QUERY_LENGTH, QueryContext, answer

__all__ = [
    "MAX_QUERY_LENGTH",
    "Limits",
    "QueryContext",
    "QueryResult",
    "StoreInfo",
    "answer",
    "compile_query",
    "run_plan",
    "run_query",
]


def compile_query(
    query_text: str,
    *,
    stores: Mapping[str, StoreInfo],
    account_currency: str,
    account_timezone: str,
    time_zone: str | None = None,
    store_ids: Collection[str] | None = None,
    now: datetime | None = None,
    limits: Limits | None = None,
) -> Plan:
    """Parse and check a query. Raises InvalidQuery with every diagnostic found."""
    context = QueryContext(
        stores,
        account_currency,
        account_timezone,
        time_zone,
        None if store_ids is None else tuple(store_ids),
        now,
    )
    return context.check(query_text, limits or Limits())


def run_plan(
    cursor: duckdb.DuckDBPyConnection, plan: Plan, limits: Limits | None = None
) -> QueryResult:
    """Run a checked query (compile_query's plan) on `cursor`: no second parse or check."""
    return execute(cursor, plan, limits or Limits())


def run_query(
    cursor: duckdb.DuckDBPyConnection,
    query_text: str,
    *,
    stores: Mapping[str, StoreInfo],
    account_currency: str,
    account_timezone: str,
    time_zone: str | None = None,
    store_ids: Collection[str] | None = None,
    now: datetime | None = None,
    limits: Limits | None = None,
) -> QueryResult:
    """Run a query over the readable `stores` (id -> name, currency, zone), narrowed by the
    request's `store_ids`. Raises InvalidQuery (400) with every diagnostic, QueryTimedOut
    (504) past the time limit."""
    limits = limits or Limits()
    plan = compile_query(
        query_text,
        stores=stores,
        account_currency=account_currency,
        account_timezone=account_timezone,
        time_zone=time_zone,
        store_ids=store_ids,
        now=now,
        limits=limits,
    )
    return execute(cursor, plan, limits)
