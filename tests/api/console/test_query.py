"""The console's query page in process: the answer of /v1/query as a table, VISUALIZE
drawn as SVG with one mark per row, a picked chart, /v1/query's own diagnostics at their
line and column, and the CSV download."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import httpx
import pytest

from tests.api.console.conftest import Browser, csrf_of
from tests.api.query_world import QueryAccount, StoreSpec, add_account, sale, write_sales
from tests.api.world import World

QUERY = "FROM sales SHOW total_sales TIMESERIES day SINCE 2024-03-01 UNTIL 2024-03-07"


@pytest.fixture(scope="module")
def sales(world: World) -> QueryAccount:
    """An account of its own with sales on several days in two stores."""
    account = add_account(
        world,
        "Console Query",
        "USD",
        "UTC",
        {
            "st_cq_1": StoreSpec("Harbour", "USD", "UTC"),
            "st_cq_2": StoreSpec("Hill", "USD", "UTC"),
        },
        {"all": (["read_data"], None), "one": (["read_data"], ["st_cq_1"])},
    )
    for store, days in (("st_cq_1", (1, 2, 4)), ("st_cq_2", (2, 3, 5))):
        rows = [
            sale(account, store, f"{store}_o{day}", f"2024-03-0{day}T12:00:00Z", f"{day}0.50")
            for day in days
        ]
        write_sales(world, store, rows)
    return account


@pytest.fixture
def person(browser: Browser, sales: QueryAccount) -> Browser:
    browser.sign_in(sales.keys["all"])
    return browser


def _ask(person: Browser, query: str, **extra: str) -> httpx.Response:
    token = csrf_of(person.get("/console/query"))
    return person.request(
        "POST", "/console/query", data={"query": query, "csrf_token": token, **extra}
    )


def _marks(page: str) -> int:
    figure = page.split('id="chart"')[1].split("</figure>")[0]
    return len(re.findall(r'class="mark', figure))


def test_visualize_draws_one_mark_per_row(person: Browser, sales: QueryAccount) -> None:
    api = person.request("POST", "/v1/query", key=sales.keys["all"], json={"query": QUERY})
    assert api.status_code == 200, api.text
    rows = api.json()["rows"]
    assert rows
    page = _ask(person, QUERY + " VISUALIZE total_sales TYPE bar")
    assert page.status_code == 200, page.text[:2000]
    assert 'class="chart chart-bar"' in page.text
    assert _marks(page.text) == len(rows)
    # The table has the same rows.
    table = page.text.split('id="result"')[1].split("</table>")[0]
    assert table.count("<tr>") == len(rows) + 1
    line = _ask(person, QUERY + " VISUALIZE total_sales")
    assert 'class="chart chart-line"' in line.text  # a time series defaults to a line
    assert _marks(line.text) == len(rows)


def test_a_picked_chart_draws_without_visualize_and_none_is_drawn_unasked(
    person: Browser,
) -> None:
    plain = _ask(person, QUERY)
    assert plain.status_code == 200 and 'id="chart"' not in plain.text
    picked = _ask(person, QUERY, chart="horizontal_bar")
    assert 'class="chart chart-horizontal_bar"' in picked.text


def test_diagnostics_are_those_of_the_api_at_their_line_and_column(
    person: Browser, sales: QueryAccount
) -> None:
    bad = "FROM sales\nSHOW total_salez\nTIMESERIES day"
    api = person.request("POST", "/v1/query", key=sales.keys["all"], json={"query": bad})
    assert api.status_code == 400
    errors = api.json()["errors"]
    page = _ask(person, bad)
    assert page.status_code == 422
    for error in errors:
        assert f"Line {error['line']}, column {error['column']}" in page.text
        assert str(error["message"]).replace("'", "&#39;").split(".")[0] in page.text


def test_the_answer_downloads_as_csv(person: Browser, sales: QueryAccount) -> None:
    api = person.request(
        "POST",
        "/v1/query",
        key=sales.keys["all"],
        json={"query": QUERY},
        headers={"Accept": "text/csv"},
    )
    response = _ask(person, QUERY, download="csv")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    assert "attachment" in response.headers["content-disposition"]
    assert list(csv.reader(io.StringIO(response.text))) == list(csv.reader(io.StringIO(api.text)))


def test_a_store_limited_key_queries_only_its_stores(
    make_browser: Any, sales: QueryAccount
) -> None:
    query = "FROM sales SHOW total_sales GROUP BY store SINCE 2024-03-01 UNTIL 2024-03-07"
    everyone: Browser = make_browser()
    everyone.sign_in(sales.keys["all"])
    both = _ask(everyone, query)
    assert "Harbour" in both.text and "Hill" in both.text
    limited: Browser = make_browser()
    limited.sign_in(sales.keys["one"])
    page = _ask(limited, query)
    assert page.status_code == 200, page.text[:2000]
    assert "Harbour" in page.text and "Hill" not in page.text
