"""What the checks of every clause share: the query, what it is checked against, the
diagnostics found so far and the SQL aggregates the metrics collect."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime

from warehouse.catalog import Dataset
from warehouse.query import ast
from warehouse.query.compiler import time_bucket_sql
from warehouse.query.diagnostics import Diagnostic, Pos
from warehouse.query.fields import PartRegistry
from warehouse.query.plan import Source, StoreInfo
from warehouse.query.sql import Sql

# The most rows a query may return by default (QUARRY_QUERY_MAX_GROUPS): LIMIT may ask for
# up to that many.
MAX_GROUPS = 100_000


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


class Fail(Exception):
    """Abandons one item after its diagnostic is recorded."""


class State:
    """One query being checked. The checks keep going after an error, so one answer lists
    every problem: each records its diagnostic here and drops only the item at fault."""

    # Known once FROM names a dataset, before the clauses that read its fields: the
    # dataset, whether money is converted, and how its rows and local times are read.
    ds: Dataset
    fx: bool
    source: Source
    local_sql: Sql
    week_start: int

    def __init__(self, query: ast.Query, ctx: Context) -> None:
        self.q = query
        self.ctx = ctx
        self.errors: list[Diagnostic] = []
        self.parts = PartRegistry()

    def error(self, pos: Pos, message: str) -> Fail:
        self.errors.append(Diagnostic(pos, message))
        return Fail()

    def bucket(self, granularity: str) -> Sql:
        """A row's time bucket at `granularity`, in the query's zone and week."""
        return time_bucket_sql(granularity, self.local_sql, self.source, self.week_start)
