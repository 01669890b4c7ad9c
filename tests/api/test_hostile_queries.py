"""Deep and long queries through POST /v1/query: any query up to the length cap answers 200
or 400 "Invalid query" with a positioned diagnostic, never a 500 (issue 17, item 1).

The parser bounds nesting (parentheses, NOT, minus) and the arithmetic operators of a
clause; the queries below sit on both sides of those bounds, and a bounded property test
builds deep and long ones at random.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.conftest import Client, assert_problem
from tests.api.world import World
from warehouse.query import MAX_QUERY_LENGTH
from warehouse.query.diagnostics import MAX_LISTED, MAX_MESSAGE
from warehouse.query.parser import MAX_NESTING, MAX_OPERATORS


def post_query(client: Client, world: World, query: str) -> httpx.Response:
    return client.request("POST", "/v1/query", key=world.keys["a_all"], json={"query": query})


def assert_invalid_at(response: httpx.Response, line: int, column: int) -> dict[str, Any]:
    body = assert_problem(response, 400, "Invalid query")
    first = body["errors"][0]
    assert (first["line"], first["column"]) == (line, column), body
    return body


@pytest.mark.parametrize(
    ("name", "query", "column"),
    [
        # The column is that of the token one level past MAX_NESTING.
        ("parentheses", "FROM sales SHOW " + "(" * 300 + "total_sales" + ")" * 300, 17 + 50),
        ("not", "FROM sales SHOW total_sales WHERE " + "NOT " * 1000 + "store = 'x'", 35 + 200),
        ("minus", "FROM sales SHOW " + "- " * 3000 + "total_sales", 17 + 100),
        (
            "conditions",
            "FROM sales SHOW total_sales WHERE " + "(" * 400 + "store = 'x'" + ")" * 400,
            35 + 50,
        ),
    ],
)
def test_deep_nesting_is_an_invalid_query_at_the_level_too_deep(
    client: Client, world: World, name: str, query: str, column: int
) -> None:
    body = assert_invalid_at(post_query(client, world, query), 1, column)
    assert f"more than {MAX_NESTING} deep" in body["errors"][0]["message"]


def test_a_long_arithmetic_chain_is_an_invalid_query_at_its_first_operator_too_many(
    client: Client, world: World
) -> None:
    query = "FROM sales SHOW " + " + ".join(["total_sales"] * 5000)
    column = (
        len("FROM sales SHOW ") + 1 + MAX_OPERATORS * len("total_sales + ") + len("total_sales")
    )
    body = assert_invalid_at(post_query(client, world, query), 1, column + 1)
    assert f"at most {MAX_OPERATORS}" in body["errors"][0]["message"]


def test_queries_at_the_bounds_answer(client: Client, world: World) -> None:
    nested = "(" * (MAX_NESTING - 1) + "-total_sales" + ")" * (MAX_NESTING - 1)
    # The minus and MAX_OPERATORS - 1 pluses: exactly MAX_OPERATORS in the clause.
    chain = " + ".join([nested] + ["net_sales"] * (MAX_OPERATORS - 1))
    negated = "NOT " * (MAX_NESTING - 1) + "(product_title = 'x')"
    having = " - ".join(["x"] * (MAX_OPERATORS + 1))
    query = f"FROM sales SHOW {chain} AS x WHERE {negated} HAVING {having} > 0 GROUP BY store"
    response = post_query(client, world, query)
    assert response.status_code == 200, response.text


# ---- random deep and long queries ----

_WRAPS = (
    lambda e: f"({e})",
    lambda e: f"-{e}",
    lambda e: f"{e} + total_sales",
    lambda e: f"{e} * 2",
    lambda e: f"net_sales - {e}",
    lambda e: f"({e}) / (1 + 1)",
)
_CONDITION_WRAPS = (
    lambda c: f"({c})",
    lambda c: f"NOT {c}",
    lambda c: f"{c} AND orders > 1",
    lambda c: f"product_title = 'a' OR {c}",
    lambda c: f"NOT ({c}) OR (total_sales + 1 > 2)",
)


def _apply(base: str, wraps: tuple[Any, ...], runs: list[tuple[int, int]]) -> str:
    text = base
    for choice, times in runs:
        for _ in range(times):
            text = wraps[choice % len(wraps)](text)
    return text


# Runs of one wrap repeated up to 1,000 times: random single steps would seldom go deep.
_RUNS = st.lists(st.tuples(st.integers(0, 5), st.integers(1, 1000)), max_size=4)


@st.composite
def deep_queries(draw: st.DrawFn) -> str:
    expression = _apply("total_sales", _WRAPS, draw(_RUNS))
    condition = _apply("product_title = 'x'", _CONDITION_WRAPS, draw(_RUNS))
    having = _apply("x > 0", _CONDITION_WRAPS, draw(_RUNS))
    query = f"FROM sales SHOW {expression} AS x WHERE {condition} HAVING {having}"
    return query[:MAX_QUERY_LENGTH]


@given(query=deep_queries())
@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_any_deep_or_long_query_answers_200_or_a_positioned_400(
    client: Client, world: World, query: str
) -> None:
    response = post_query(client, world, query)
    assert response.status_code in (200, 400), (response.status_code, response.text[:500])
    if response.status_code == 400:
        body = assert_problem(response, 400, "Invalid query")
        assert all(e["line"] >= 1 and e["column"] >= 1 for e in body["errors"]), body


@pytest.mark.parametrize(
    ("query", "total"),
    [
        ("FROM sales SHOW " + "@" * (MAX_QUERY_LENGTH - 16), MAX_QUERY_LENGTH - 16),
        ("FROM sales SHOW " + "a," * 4999 + "a", 5000),
    ],
    ids=["characters", "fields"],
)
def test_the_errors_listed_are_capped(client: Client, world: World, query: str, total: int) -> None:
    # One error per character once made an 8 MB answer.
    response = post_query(client, world, query)
    body = assert_invalid_at(response, 1, 17)
    assert len(body["errors"]) == MAX_LISTED
    found = re.search(
        r"\(and ([\d,]+) more: ([\d,]+) errors, the first (\d+) listed\)$", body["detail"]
    )
    assert found, body["detail"]
    more, errors, listed = (int(group.replace(",", "")) for group in found.groups())
    assert errors == more + 1 >= total and listed == MAX_LISTED
    assert len(response.content) < 20_000


def test_a_message_quoting_a_long_token_is_cut(client: Client, world: World) -> None:
    response = post_query(client, world, "FROM sales SHOW " + "a" * 50_000)
    body = assert_invalid_at(response, 1, 17)
    [error] = body["errors"]
    assert len(error["message"]) == MAX_MESSAGE and error["message"].endswith("...")
    assert len(response.content) < 2 * MAX_MESSAGE + 1_000
