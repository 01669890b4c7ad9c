"""Names and types against the catalog: every diagnostic, positioned, with did-you-mean."""

from __future__ import annotations

import pytest

from quarry.errors import InvalidQuery
from tests.warehouse.query.data import ACCOUNT_CURRENCY, ACCOUNT_ZONE, NOW, STORES
from warehouse.query import compile_query
from warehouse.query.plan import Plan


def plan(text: str, **kw: object) -> Plan:
    args = dict(
        stores=STORES, account_currency=ACCOUNT_CURRENCY, account_timezone=ACCOUNT_ZONE, now=NOW
    )
    args.update(kw)
    return compile_query(text, **args)  # type: ignore[arg-type]


def errors(text: str, **kw: object) -> list[dict[str, object]]:
    with pytest.raises(InvalidQuery) as exc:
        plan(text, **kw)
    assert exc.value.status == 400 and exc.value.title == "Invalid query"
    return exc.value.errors


def messages(text: str, **kw: object) -> list[str]:
    return [str(e["message"]) for e in errors(text, **kw)]


def test_empty_query_is_invalid() -> None:
    assert errors("") == [
        {"line": 1, "column": 1, "message": "The query is empty.", "severity": "error"}
    ]


def test_from_and_show_are_required() -> None:
    assert any("SHOW is required" in m for m in messages("FROM sales"))
    assert any("FROM is required" in m for m in messages("SHOW total_sales"))


def test_all_errors_in_one_pass_with_positions() -> None:
    found = errors(
        "FROM sales\n"
        "SHOW total_sale, sum(product_title)\n"
        "WHERE store IN ('Main Stret', 'Secret Outlet') AND billing_contry = 'US'\n"
        "GROUP BY prodct_title\n"
        "DURING last_monht\n"
        "WITH CURRENCY 'EURO', TIMEZONE 'Europe/Berln'"
    )
    got = {(e["line"], e["column"]): e["message"] for e in found}
    assert got[(2, 6)] == "Unknown field 'total_sale' in sales. Did you mean 'total_sales'?"
    assert got[(2, 18)].startswith("sum() needs a number or money field")
    assert got[(3, 17)] == "Unknown store 'Main Stret'. Did you mean 'Main Street'?"
    # A store the key cannot read is answered exactly like one that does not exist.
    assert got[(3, 31)] == "Unknown store 'Secret Outlet'."
    assert got[(3, 52)].startswith("Unknown field 'billing_contry' in sales. Did you mean")
    assert got[(4, 10)].startswith("Unknown field 'prodct_title'")
    assert got[(5, 8)] == "Unknown date range 'last_monht'. Did you mean 'last_month'?"
    assert got[(6, 15)] == "Unknown currency 'EURO'. Did you mean 'EUR'?"
    assert got[(6, 32)].startswith("Unknown time zone 'Europe/Berln'. Did you mean")
    assert all(e["severity"] == "error" for e in found)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("FROM salez SHOW total_sales", "Unknown dataset 'salez'. Did you mean 'sales'?"),
        ("FROM sales SHOW product_title", "product_title is a dimension: add it to GROUP BY."),
        ("FROM sales SHOW total_sales WHERE total_sales > 5", "filter it with HAVING"),
        ("FROM sales SHOW total_sales GROUP BY total_sales", "GROUP BY takes dimensions"),
        ("FROM sales SHOW total_sales TIMESERIES dya", "Did you mean 'day'?"),
        ("FROM sales SHOW sum(orders)", "orders is already an aggregate"),
        ("FROM orders SHOW sum(order_count)", "order_count can only be counted"),
        ("FROM sales SHOW total_sales SINCE -1d DURING today", "DURING sets the whole window"),
        ("FROM sales SHOW total_sales LIMIT 100001", "LIMIT must be between 1 and 100,000"),
        ("FROM sales SHOW total_sales ORDER BY totl_sales", "Did you mean 'total_sales'?"),
        ("FROM sales SHOW total_sales HAVING net_sales > 1", "HAVING can use the columns"),
        ("FROM sales SHOW total_sales WHERE billing_country = 5", "compare it with a string"),
        ("FROM sales SHOW avrg(total_sales)", "Unknown function 'avrg'. Did you mean 'avg'?"),
        ("FROM sales SHOW total_sales, total_sales", "Two columns are named 'total_sales'"),
        ("FROM sales SHOW total_sales WITH CUMULATIVE_VALUES", "add TIMESERIES or a time"),
        ("FROM sales SHOW total_sales WITH WEEK_START 'sundy'", "Did you mean 'sunday'?"),
        (
            "FROM sales SHOW total_sales GROUP BY TOP 2 store, TOP 2 product_title",
            "Only one TOP per query",
        ),
    ],
)
def test_diagnostics(text: str, message: str) -> None:
    assert any(message in m for m in messages(text)), messages(text)


def test_columns_types_and_default_order() -> None:
    p = plan(
        "FROM sales SHOW net_sales / orders AS aov, total_sales, count(order_id) "
        "GROUP BY store TIMESERIES week"
    )
    assert [(c.name, c.type, c.role) for c in p.columns] == [
        ("week", "date", "dimension"),
        ("store", "string", "dimension"),
        ("aov", "money", "metric"),
        ("total_sales", "money", "metric"),
        ("count_order_id", "number", "metric"),
    ]
    assert p.order == [("week", False)]
    assert plan("FROM sales SHOW total_sales, orders GROUP BY store").order == [
        ("total_sales", True)
    ]


def test_store_ids_and_where_store_intersect() -> None:
    p = plan(
        "FROM sales SHOW total_sales WHERE store = 'Tokyo Corner'",
        store_ids=["st_main", "st_tokyo", "st_unknown"],
    )
    assert p.store_ids == ["st_main", "st_tokyo"]


def test_zone_precedence_and_conversion_flag() -> None:
    assert plan("FROM sales SHOW total_sales").zone_name == ACCOUNT_ZONE
    assert plan("FROM sales SHOW total_sales", time_zone="Asia/Tokyo").zone_name == "Asia/Tokyo"
    p = plan("FROM sales SHOW total_sales WITH TIMEZONE 'Europe/Berlin'", time_zone="Asia/Tokyo")
    assert p.zone_name == "Europe/Berlin"
    assert plan("FROM sales SHOW total_sales", store_ids=["st_main"]).fx is False
    assert plan("FROM sales SHOW total_sales").fx is True


def test_account_zone_uses_the_precomputed_local_time() -> None:
    assert plan("FROM sales SHOW total_sales").local_sql.text == "t.happened_at_account"
    berlin = plan(
        "FROM sales SHOW total_sales WITH TIMEZONE 'Europe/Berlin'", store_ids=["st_berlin"]
    )
    assert berlin.local_sql.text == "t.happened_at_store"
    other = plan("FROM sales SHOW total_sales WITH TIMEZONE 'Asia/Tokyo'")
    # Converted at query time, the zone a quoted literal (a grouping may not hold parameters).
    assert other.local_sql.text == "timezone('Asia/Tokyo', t.happened_at)"
    assert other.local_sql.params == ()


def test_user_values_are_bound_never_spliced() -> None:
    from warehouse.query.compiler import Relations, aggregate_sql

    evil = "x'); DROP TABLE sales; --"
    p = plan(
        f"FROM sales SHOW total_sales WHERE product_title = '{evil.replace(chr(39), chr(39) * 2)}'"
    )
    sql = aggregate_sql(p, p.window, Relations("st", None), group_dims=[], with_time=False)
    assert evil not in sql.text and evil in sql.params
