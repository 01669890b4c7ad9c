"""One query asked of the warehouse: checked once, answered from a snapshot or a cache.

    context = QueryContext(stores, "USD", "America/New_York", store_ids=("st_1",), now=now)
    result = answer(reader, "FROM sales SHOW total_sales", context, Limits(), cache=cache)

The query is parsed and checked once, before any warehouse read (an invalid query costs
no snapshot); that one plan keys the cache (its resolved windows are how the current time
enters a result) and, on a miss, runs on a cursor of the snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from warehouse.query.checker import Context, check
from warehouse.query.diagnostics import START, Diagnostic, invalid_query
from warehouse.query.executor import Limits, execute, source
from warehouse.query.parser import parse
from warehouse.query.plan import Plan, StoreInfo
from warehouse.query.result import QueryResult
from warehouse.reader import WarehouseReader

# Far above any real query (they run to a few hundred characters); a bound keeps a
# multi-megabyte string out of the lexer, whichever door it came in by (/v1/query's schema,
# the shopifyqlQuery adapter, the console's form).
MAX_QUERY_LENGTH = 100_000


class ResultCache(Protocol):
    """Where answers are kept between requests (api.query_cache.QueryCache)."""

    def get(self, key: Hashable, /) -> QueryResult | None: ...

    def put(self, key: Hashable, result: QueryResult, /) -> None: ...


# The cache key of a checked query read from a snapshot: (snapshot key, plan) -> key.
CacheKey = Callable[[str, Plan], Hashable]


@dataclass(frozen=True)
class QueryContext:
    """What a query is asked against besides its text: the readable stores (by id), the
    account's currency and zone, the request's zone and store_ids, and the one instant
    the query resolves its windows at."""

    stores: Mapping[str, StoreInfo]
    account_currency: str
    account_timezone: str
    time_zone: str | None = None
    store_ids: tuple[str, ...] | None = None
    now: datetime | None = None

    def check(self, text: str, limits: Limits) -> Plan:
        """Parse and check `text`. Raises InvalidQuery with every diagnostic found."""
        if len(text) > MAX_QUERY_LENGTH:
            message = (
                f"The query is {len(text):,} characters long, more than the "
                f"{MAX_QUERY_LENGTH:,} a query may have."
            )
            raise invalid_query([Diagnostic(START, message)])
        query, errors = parse(text)
        ctx = Context(
            self.stores,
            self.account_currency,
            self.account_timezone,
            self.time_zone,
            self.store_ids,
            self.now,
            max_groups=limits.max_groups,
        )
        plan, check_errors = (None, []) if not query.clauses else check(query, ctx)
        errors = errors + check_errors
        if errors or plan is None:
            raise invalid_query(errors)
        return plan


def answer(
    reader: WarehouseReader,
    text: str,
    context: QueryContext,
    limits: Limits,
    *,
    cache: ResultCache | None = None,
    cache_key: CacheKey | None = None,
) -> QueryResult:
    """The result of `text` over the context's stores, from `cache` when it holds one for
    the snapshot read (keyed by `cache_key`), else computed and put there. Raises
    InvalidQuery (400), QueryTimedOut (504), MissingExchangeRate."""
    plan = context.check(text, limits)
    store_ids = list(context.store_ids if context.store_ids is not None else context.stores)
    snapshot = reader.snapshot(store_ids)
    key = cache_key(snapshot.key, plan) if cache is not None and cache_key is not None else None
    if cache is not None and key is not None:
        cached = cache.get(key)
        if cached is not None:
            return cached
    choice = source(plan, limits)
    # The rollup it reads, from the reader's memory where the reader keeps rollups.
    with reader.connect(snapshot, resident=[choice.source]) as cursor:
        result = execute(cursor, plan, limits, choice)
    if cache is not None and key is not None:
        cache.put(key, result)
    return result
