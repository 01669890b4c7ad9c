"""The query result cache: what its key holds, its bounds, and that the API answers from
it only while nothing the answer depends on has changed."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest

from api.query_cache import QueryCache, QueryKey
from registry.accounts import get_store
from tests.api.conftest import Client
from tests.api.expect import decode
from tests.api.query_world import (
    QueryAccount,
    StoreSpec,
    add_account,
    sale,
    write_rates,
    write_sales,
)
from tests.api.world import World
from warehouse.query import Limits, QueryResult, StoreInfo, compile_query

STORES = {"st_x": StoreInfo("Main Street", "USD", "America/New_York")}


def result(rows: int = 1, columns: int = 1) -> QueryResult:
    names = [f"c{k}" for k in range(columns)]
    return QueryResult(
        columns=[{"name": n, "title": n, "type": "number", "role": "metric"} for n in names],
        rows=[dict.fromkeys(names, k) for k in range(rows)],
        currency="USD",
        time_zone="UTC",
        window={"gte": "2024-01-01T00:00:00Z", "lt": "2024-01-02T00:00:00Z"},
    )


def key(query: str, now: datetime, snapshot: str = "s1", **context: Any) -> QueryKey:
    settings: dict[str, Any] = {
        "stores": STORES,
        "account_currency": "USD",
        "account_timezone": "America/New_York",
        "time_zone": None,
        "store_ids": list(STORES),
        **context,
    }
    plan = compile_query(query, now=now, **settings)
    return QueryKey.of(snapshot=snapshot, query=query, plan=plan, limits=Limits(), **settings)


MORNING = datetime(2024, 5, 10, 13, 0, tzinfo=UTC)  # 09:00 in New York
EVENING = datetime(2024, 5, 10, 23, 0, tzinfo=UTC)  # 19:00, same day
NEXT_DAY = datetime(2024, 5, 11, 13, 0, tzinfo=UTC)


# ---- the key ----


def test_key_follows_relative_windows_and_ignores_the_clock_otherwise() -> None:
    relative = "FROM sales SHOW total_sales SINCE -7d"
    assert key(relative, MORNING) == key(relative, EVENING)  # same resolved window
    assert key(relative, MORNING) != key(relative, NEXT_DAY)
    hourly = "FROM sales SHOW total_sales SINCE -6h UNTIL now"
    assert key(hourly, MORNING) != key(hourly, EVENING)
    fixed = "FROM sales SHOW total_sales SINCE 2024-01-01 UNTIL 2024-01-31"
    assert key(fixed, MORNING) == key(fixed, NEXT_DAY)
    compared = "FROM sales SHOW total_sales DURING 2024-01-05 COMPARE TO -1y"
    assert key(compared, MORNING) != key(compared, NEXT_DAY.replace(year=2025))


def test_key_holds_everything_else_an_answer_depends_on() -> None:
    query = "FROM sales SHOW total_sales SINCE 2024-01-01 UNTIL 2024-01-31"
    base = key(query, MORNING)
    renamed = {"st_x": StoreInfo("High Street", "USD", "America/New_York")}
    assert (
        len(
            {
                base,
                key(query, MORNING, snapshot="s2"),
                key(query + " ", MORNING),
                key(query, MORNING, stores=renamed),
                key(query, MORNING, account_currency="EUR"),
                key(query, MORNING, time_zone="Europe/Berlin"),
            }
        )
        == 6
    )


# ---- bounds ----


def test_least_recently_used_goes_first() -> None:
    cache = QueryCache(max_entries=2, ttl_seconds=300)
    a, b, c = (key(f"FROM sales SHOW total_sales LIMIT {n}", MORNING) for n in (1, 2, 3))
    cache.put(a, result())
    cache.put(b, result())
    assert cache.get(a) is not None
    cache.put(c, result())
    assert cache.get(b) is None
    assert cache.get(a) is not None and cache.get(c) is not None
    assert (cache.hits, cache.misses) == (3, 1)


def test_entries_expire_after_the_ttl() -> None:
    now = [0.0]
    cache = QueryCache(ttl_seconds=10, clock=lambda: now[0])
    k = key("FROM sales SHOW total_sales", MORNING)
    cache.put(k, result())
    now[0] = 9.9
    assert cache.get(k) is not None
    now[0] = 10.0
    assert cache.get(k) is None and len(cache) == 0


def test_size_is_bounded_in_cells() -> None:
    cache = QueryCache(max_cells=90, ttl_seconds=300)
    small = [key(f"FROM sales SHOW total_sales LIMIT {n}", MORNING) for n in (1, 2, 3)]
    for k in small:
        cache.put(k, result(rows=10, columns=2))  # 11 x 3 = 33 cells each
    assert cache.get(small[0]) is None and cache.get(small[2]) is not None
    big = key("FROM sales SHOW total_sales LIMIT 4", MORNING)
    cache.put(big, result(rows=200))
    assert cache.get(big) is None and len(cache) == 2  # too big alone: not kept


def test_a_zero_ttl_turns_it_off() -> None:
    cache = QueryCache(ttl_seconds=0)
    k = key("FROM sales SHOW total_sales", MORNING)
    cache.put(k, result())
    assert cache.get(k) is None


# ---- through the API ----


@pytest.fixture(scope="module")
def shop(world: World) -> QueryAccount:
    account = add_account(
        world,
        "Cache",
        "USD",
        "UTC",
        {"st_qc_1": StoreSpec("Corner", "USD", "UTC")},
        {"all": (["read_data"], None)},
    )
    write_sales(world, "st_qc_1", [sale(account, "st_qc_1", "c1", "2024-02-01T12:00:00Z", "10.00")])
    return account


QUERY = "FROM sales SHOW total_sales GROUP BY store SINCE 2024-02-01 UNTIL 2024-02-29"


def total(client: Client, shop: QueryAccount, **body: Any) -> list[dict[str, Any]]:
    response = client.request(
        "POST", "/v1/query", key=shop.keys["all"], json={"query": QUERY, **body}
    )
    assert response.status_code == 200, response.text
    return decode(response.text)["rows"]


def test_a_repeated_query_is_answered_from_the_cache(make_client: Any, shop: QueryAccount) -> None:
    client = make_client()
    first = total(client, shop)
    cache: QueryCache = client.app.state.query_cache
    assert (cache.hits, cache.misses) == (0, 1)
    assert total(client, shop) == first
    csv = client.request(
        "POST",
        "/v1/query",
        key=shop.keys["all"],
        json={"query": QUERY},
        headers={"Accept": "text/csv"},
    )
    assert csv.status_code == 200 and csv.text.startswith("Store,Total sales\r\nCorner,")
    assert (cache.hits, cache.misses) == (2, 1)  # CSV renders the same cached result
    total(client, shop, time_zone="Asia/Tokyo")
    assert (cache.hits, cache.misses) == (2, 2)


def test_the_setting_zero_turns_the_apps_cache_off(make_client: Any, shop: QueryAccount) -> None:
    client = make_client(query_cache_seconds=0)
    assert total(client, shop) == total(client, shop)
    cache: QueryCache = client.app.state.query_cache
    assert (cache.hits, cache.misses, len(cache)) == (0, 2, 0)


def test_a_new_snapshot_changes_the_answer(
    make_client: Any, world: World, shop: QueryAccount
) -> None:
    client = make_client()
    before = total(client, shop)
    assert before == [{"store": "Corner", "total_sales": Decimal("10.00")}]
    write_sales(world, "st_qc_1", [sale(shop, "st_qc_1", "c2", "2024-02-02T12:00:00Z", "2.50")])
    assert total(client, shop) == [{"store": "Corner", "total_sales": Decimal("12.50")}]
    cache: QueryCache = client.app.state.query_cache
    assert cache.hits == 0


def test_a_renamed_store_changes_the_answer(
    make_client: Any, world: World, shop: QueryAccount
) -> None:
    client = make_client()
    rows = total(client, shop)
    assert rows[0]["store"] == "Corner"
    with world.registry.session() as session:
        get_store(session, "st_qc_1").name = "Corner Shop"
    try:
        assert total(client, shop)[0]["store"] == "Corner Shop"
    finally:
        with world.registry.session() as session:
            get_store(session, "st_qc_1").name = "Corner"


def test_rates_are_part_of_the_snapshot(make_client: Any, world: World) -> None:
    """exchange_rates is global: it is read at the stores' published snapshot, so new rates
    reach answers (and leave the cache) with the next published snapshot."""
    account = add_account(
        world,
        "Cache FX",
        "USD",
        "UTC",
        {"st_qc_eu": StoreSpec("Euro", "EUR", "UTC")},
        {"all": (["read_data"], None)},
    )
    rows = [sale(account, "st_qc_eu", "e1", "2024-02-01T12:00:00Z", "10.00")]
    write_rates(world, [(date(2024, 2, 1), "EUR", "0.5")])
    write_sales(world, "st_qc_eu", rows)
    client = make_client()
    assert total(client, account) == [{"store": "Euro", "total_sales": Decimal("20.00")}]
    write_rates(world, [(date(2024, 2, 1), "EUR", "0.8")])
    write_sales(world, "st_qc_eu", rows)
    assert total(client, account) == [{"store": "Euro", "total_sales": Decimal("12.50")}]


def test_an_uncached_query_is_parsed_and_checked_once(
    make_client: Any, shop: QueryAccount, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan that keys the cache is the plan that runs (issue 19: it was compiled twice,
    once for the key and once to run). Counted by wrapping the real parser and checker."""
    from warehouse.query import service

    calls = {"parse": 0, "check": 0}
    parse, check = service.parse, service.check

    def counted_parse(text: str) -> Any:
        calls["parse"] += 1
        return parse(text)

    def counted_check(query: Any, ctx: Any) -> Any:
        calls["check"] += 1
        return check(query, ctx)

    monkeypatch.setattr(service, "parse", counted_parse)
    monkeypatch.setattr(service, "check", counted_check)
    client = make_client()
    total(client, shop)
    assert calls == {"parse": 1, "check": 1}
    total(client, shop)  # a hit still checks (the key holds the resolved windows), once
    assert calls == {"parse": 2, "check": 2}
    assert client.app.state.query_cache.hits == 1
