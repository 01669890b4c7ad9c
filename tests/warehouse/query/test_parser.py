"""Lexer and parser: clauses in any order, comments, case, and every syntax error at once."""

from __future__ import annotations

from decimal import Decimal

import pytest

from warehouse.query import ast
from warehouse.query.lexer import Kind, lex
from warehouse.query.parser import parse


def ok(text: str) -> ast.Query:
    query, errors = parse(text)
    assert errors == [], errors
    return query


def messages(text: str) -> list[tuple[int, int, str]]:
    return [(d.pos.line, d.pos.column, d.message) for d in parse(text)[1]]


def test_tokens_keep_positions_across_lines_and_comments() -> None:
    tokens, errors = lex("FROM sales -- note\n/* a\nb */ SHOW  total_sales")
    assert errors == []
    assert [(t.text, t.pos.line, t.pos.column) for t in tokens[:3]] == [
        ("FROM", 1, 1),
        ("sales", 1, 6),
        ("SHOW", 3, 6),
    ]


def test_dates_offsets_and_numbers_lex_apart() -> None:
    kinds = [t.kind for t in lex("2024-01-31 2024-01-31T10:00:00Z -30d 12 1.5 'x' \"A b\"")[0]]
    assert kinds[:-1] == [
        Kind.DATE,
        Kind.DATETIME,
        Kind.OFFSET,
        Kind.NUMBER,
        Kind.NUMBER,
        Kind.STRING,
        Kind.QUOTED,
    ]


def test_string_escapes() -> None:
    tokens = lex("'it''s' 'a\\'b'")[0]
    assert [t.value for t in tokens[:2]] == ["it's", "a'b"]


def test_clauses_in_any_order_and_any_case() -> None:
    q = ok("limit 5 order by total_sales desc SINCE -3m show total_sales from SALES")
    assert q.dataset and q.dataset.name == "sales"
    assert q.limit == 5 and q.order_by[0].descending
    assert q.since and q.since.kind == "offset" and q.since.unit == "m"


def test_show_expressions_aliases_and_calls() -> None:
    q = ok(
        "FROM sales SHOW (gross_sales + discounts) / orders AS aov, "
        'count_distinct(customer_id), sum(total_sales) AS "Total $"'
    )
    first = q.show[0]
    assert first.alias == "aov" and isinstance(first.expr, ast.BinOp) and first.expr.op == "/"
    assert isinstance(q.show[1].expr, ast.Call) and q.show[1].expr.func == "count_distinct"
    assert q.show[2].alias == "Total $"


def test_count_distinct_in_the_analytics_api_spelling() -> None:
    # The retired Analytics API's ShopifyQL page spelled a distinct count count(DISTINCT x).
    q = ok("FROM sales SHOW count(DISTINCT customer_id), COUNT(distinct store_id)")
    calls = [item.expr for item in q.show]
    assert [(c.func, c.arg.name) for c in calls if isinstance(c, ast.Call)] == [
        ("count_distinct", "customer_id"),
        ("count_distinct", "store_id"),
    ]
    assert messages("FROM sales SHOW sum(DISTINCT total_sales)") == [
        (1, 21, "DISTINCT is taken by count only: count(DISTINCT x), not sum(DISTINCT x).")
    ]


def test_where_operators_and_precedence() -> None:
    q = ok(
        "FROM sales SHOW total_sales WHERE a = 'x' OR b IN ('1', '2') AND NOT c IS NULL "
        "AND d NOT BETWEEN 1 AND 5 AND e STARTS WITH 'p' AND f NOT CONTAINS 'q' "
        "AND (g != 'z' OR h ENDS WITH 's')"
    )
    assert isinstance(q.where, ast.Or)
    conj = q.where.items[1]
    assert isinstance(conj, ast.And) and len(conj.items) == 6
    assert isinstance(conj.items[2], ast.Between) and conj.items[2].negated
    assert isinstance(conj.items[4], ast.TextMatch) and conj.items[4].negated


def test_group_by_top_and_legacy_by() -> None:
    q = ok("FROM sales SHOW total_sales GROUP BY ONLY TOP 5 product_title, month")
    assert q.group_by[0].top == 5 and q.group_by[0].only
    q = ok("FROM sales SHOW total_sales BY month SINCE -1y UNTIL today")
    assert q.group_by[0].name.name == "month"


def test_compare_to_list_with_until_and_with_modifiers() -> None:
    q = ok(
        "FROM sales SHOW total_sales SINCE -30d COMPARE TO previous_year, "
        "startOfQuarter(-3q) UNTIL endOfQuarter(-3q) WITH TOTALS, CURRENCY 'EUR', "
        "TIMEZONE 'Europe/Berlin', WEEK_START 'sunday', PERCENT_CHANGE"
    )
    assert q.compare[0].keyword == "previous_year"
    assert q.compare[1].start and q.compare[1].end and q.compare[1].end.name == "endofquarter"
    assert [m.name for m in q.modifiers] == [
        "TOTALS",
        "CURRENCY",
        "TIMEZONE",
        "WEEK_START",
        "PERCENT_CHANGE",
    ]


def test_visualize_is_accepted() -> None:
    q = ok("FROM sales SHOW total_sales GROUP BY day VISUALIZE total_sales TYPE line")
    assert q.group_by and "VISUALIZE" in q.clauses
    # The chart asked for is kept for the console to draw; without TYPE there is none.
    assert q.chart_type == "line"
    assert ok("FROM sales VISUALIZE total_sales").chart_type is None


def test_numbers_are_decimals() -> None:
    q = ok("FROM sales SHOW total_sales HAVING total_sales > 10.25")
    assert isinstance(q.having, ast.Compare) and q.having.right == ast.NumberLit(
        Decimal("10.25"), q.having.right.pos
    )


def test_empty_query() -> None:
    assert messages("  -- nothing\n") == [(1, 1, "The query is empty.")]


def test_every_syntax_error_is_reported_in_one_pass() -> None:
    found = messages("FROM sales\nSHWO total_sales\nLIMIT ten\nWITH TOTLAS\nSHOW x SHOW y")
    assert (2, 1, "Unknown keyword 'SHWO'. Did you mean 'SHOW'?") in found
    assert (3, 7, "Expected a row count (a whole number) but found 'ten'.") in found
    assert (4, 6, "Unknown WITH modifier 'TOTLAS'. Did you mean 'TOTALS'?") in found
    assert any("SHOW appears twice" in m for _, _, m in found)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("FROM sales SHOW total_sales WHERE x", "Expected a comparison"),
        ("FROM sales SHOW total_sales WHERE x = 'a", "Unterminated string"),
        ("FROM sales SHOW total_sales SINCE", "Expected a date"),
        ("FROM sales SHOW total_sales GROUP product_title", "Expected BY"),
        ("FROM sales SHOW total_sales ~", "Unexpected character"),
        ("FROM sales SHOW sum(", "Expected a field name"),
    ],
)
def test_syntax_errors(text: str, message: str) -> None:
    assert any(message in m for _, _, m in messages(text)), messages(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Read as the offset it means, so nothing else is reported.
        (
            "FROM sales SHOW total_sales SINCE -7D UNTIL -1D",
            [
                (
                    1,
                    35,
                    "Offset units are lowercase (s, min, h, d, w, m (month), q, y): "
                    "write '-7d' for '-7D'.",
                ),
                (
                    1,
                    45,
                    "Offset units are lowercase (s, min, h, d, w, m (month), q, y): "
                    "write '-1d' for '-1D'.",
                ),
            ],
        ),
        (
            "FROM sales SHOW total_sales SINCE -30days",
            [
                (
                    1,
                    35,
                    "'-30days' is neither a number nor a date offset (a whole number "
                    "and a lowercase unit: s, min, h, d, w, m (month), q, y, as in -30d).",
                ),
                (
                    1,
                    42,
                    "Expected a date (2024-01-31, -30d, today, last_month, "
                    "startOfMonth(-1m)) but found the end of the query.",
                ),
            ],
        ),
    ],
)
def test_a_number_run_into_letters_is_named_whole(
    text: str, expected: list[tuple[int, int, str]]
) -> None:
    assert messages(text) == expected


def test_a_name_in_any_script_is_one_name() -> None:
    tokens, errors = lex("FROM sälës SHOW größe")
    assert errors == []
    assert [t.text for t in tokens] == ["FROM", "sälës", "SHOW", "größe", ""]


@pytest.mark.parametrize(
    ("clause", "column", "message"),
    [
        ("SINCE 2024-02-30", 7, "2024-02-30 is not a date: February 2024 has 29 days."),
        ("SINCE 2024-13-01", 7, "2024-13-01 is not a date: months run from 01 to 12."),
        ("SINCE 2024-00-10", 7, "2024-00-10 is not a date: months run from 01 to 12."),
        ("SINCE 2024-01-00", 7, "2024-01-00 is not a date: January 2024 has 31 days."),
        ("SINCE 0000-01-01", 7, "0000-01-01 is out of range (dates run from 0002 to 9998)."),
        (
            "SINCE 2024-01-31T25:00:00",
            7,
            "2024-01-31T25:00:00 is not a timestamp: hours run from 00 to 23.",
        ),
        (
            "UNTIL 2024-01-31T10:60",
            7,
            "2024-01-31T10:60 is not a timestamp: minutes run from 00 to 59.",
        ),
        (
            "UNTIL 2024-01-31T10:00:00+24:00",
            7,
            "2024-01-31T10:00:00+24:00 is not a timestamp: zone offset hours run from 00 to 23.",
        ),
        ("DURING '2023-02-29'", 8, "2023-02-29 is not a date: February 2023 has 28 days."),
        (
            "SINCE -1234567890d",
            7,
            "offset -1234567890d is out of range (dates run from 0002 to 9998).",
        ),
        (
            "SINCE startOfMonth(-99999999999m)",
            20,
            "offset -99999999999m is out of range (dates run from 0002 to 9998).",
        ),
        ("COMPARE TO 2024-02-30", 12, "2024-02-30 is not a date: February 2024 has 29 days."),
        (
            "WHERE created_at > 2024-02-30",
            20,
            "2024-02-30 is not a date: February 2024 has 29 days.",
        ),
        ("LIMIT " + "9" * 5000, 7, "99999999999999999999... is too large for a row count."),
    ],
)
def test_impossible_dates_and_numbers_are_diagnostics(
    clause: str, column: int, message: str
) -> None:
    # The clause goes on a line of its own, so its columns are counted from 1.
    assert messages(f"FROM sales SHOW total_sales\n{clause}") == [(2, column, message)]


def test_a_bad_date_skips_only_its_own_token() -> None:
    # Recovery resumes at UNTIL, so its error is reported in the same pass.
    found = messages("FROM sales SHOW total_sales SINCE 2024-02-30 UNTIL 2024-13-01 LIMIT x")
    assert [(line, column) for line, column, _ in found] == [(1, 35), (1, 52), (1, 69)]


def test_leap_day_and_zone_offsets_are_dates() -> None:
    q = ok("FROM sales SHOW total_sales SINCE 2024-02-29 UNTIL 2024-03-01T23:59:59.5-09:30")
    assert q.since is not None and q.until is not None
    assert str(q.since.value) == "2024-02-29"
    assert str(q.until.value) == "2024-03-01 23:59:59.500000-09:30"


@pytest.mark.parametrize("end", ["\n", "\r\n", "\n\n", "\x0c\n"])
def test_a_query_may_end_with_a_line_break(end: str) -> None:
    q = ok(f"FROM sales\nSHOW total_sales{end}")
    assert [item.text for item in q.show] == ["total_sales"]
