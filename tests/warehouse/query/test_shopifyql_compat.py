"""ShopifyQL compatibility: real queries from Shopify's documentation and public client code
run unchanged on Quarry (across all of the key's stores).

Each entry records where the query was found. Queries naming fields or datasets Quarry does
not have are kept in GAPS: they must still parse, and get a positioned diagnostic.
"""

from __future__ import annotations

import duckdb
import pytest

from quarry.errors import InvalidQuery
from tests.warehouse.query.data import ACCOUNT_CURRENCY, ACCOUNT_ZONE, NOW, STORES
from warehouse.query import run_query
from warehouse.query.parser import parse

DOCS = "https://shopify.dev/docs/api/shopifyql/latest"
REF = "https://shopify.dev/docs/api/shopifyql"  # "ShopifyQL syntax reference"
DASHBOARD = "github:Shopify/example-shopifyql--sales-dashboard--react app/routes/app._index.jsx"
SDK = "github:Shopify/shopifyql-py shopifyql-analytics-guide.md"
WORKSHOP = "github:Shopify/unite-workshop-shopifyql web/queries/sales.js"
KENYON = "github:lizkenyon/shopifyQL-example exampleApp/shopifyql-app/web/frontend/queries"
SKILL = "github:devkindhq/shopifyql-skill skills/shopifyql/SKILL.md"
SKILL_EX = "github:devkindhq/shopifyql-skill examples/sales"
HANERU = "github:haneru-io/haneru_site src/content/docs/reference/intro-shopify-ql.md"

RUNS: list[tuple[str, str]] = [
    (DOCS, "FROM sales\nSHOW total_sales\nDURING last_month"),
    (
        f"{DOCS}/syntax.md",
        "FROM sales\n  SHOW gross_sales\n  GROUP BY sales_channel WITH TOTALS\n"
        "  DURING last_month\n"
        "  ORDER BY gross_sales DESC\n  LIMIT 10\nVISUALIZE gross_sales TYPE horizontal_bar",
    ),
    (REF, "FROM sales\nSHOW total_sales"),
    (
        REF,
        "FROM sales\nSHOW total_sales\nWHERE billing_country = 'Canada'\nSINCE last_month\n"
        "GROUP BY product_title\nORDER BY total_sales DESC\nLIMIT 10\n"
        "VISUALIZE total_sales TYPE bar",
    ),
    (SDK, "FROM sales SHOW total_sales GROUP BY month SINCE -3m ORDER BY month"),
    (
        DASHBOARD,
        "FROM sales SHOW product_title, net_sales GROUP BY product_title SINCE -30d "
        "ORDER BY net_sales DESC LIMIT 10",
    ),
    (
        DASHBOARD,
        "FROM sales SHOW total_sales, orders TIMESERIES day SINCE -7d "
        "COMPARE TO previous_period WITH TOTALS ORDER BY day ASC",
    ),
    (
        WORKSHOP,
        "FROM sales SHOW ordered_item_quantity BY product_title SINCE -1y UNTIL today "
        "ORDER BY ordered_item_quantity DESC",
    ),
    (
        f"{KENYON}/MostReturnedProducts.js",
        "FROM sales SHOW total_sales BY month SINCE -1y UNTIL today",
    ),
    (
        f"{KENYON}/MostReturnedProducts.js",
        "FROM sales SHOW returned_item_quantity BY product_id SINCE -150d "
        "ORDER BY returned_item_quantity DESC LIMIT 5",
    ),
    (
        SKILL,
        "FROM sales\nSHOW net_items_sold, gross_sales, discounts, returns, net_sales, taxes, "
        "total_sales\nWHERE product_title IS NOT NULL\nGROUP BY product_title\n"
        "SINCE -30d UNTIL today\nORDER BY total_sales DESC\nLIMIT 100",
    ),
    (
        SKILL,
        "FROM sales\nSHOW net_sales, total_sales\nWHERE billing_country = 'US'\n"
        "AND product_type != 'Gift Card'\nGROUP BY product_title\nSINCE -30d UNTIL today",
    ),
    (
        SKILL,
        "FROM sales\nSHOW product_title, net_sales, total_sales\nGROUP BY product_title\n"
        "ORDER BY total_sales DESC\nLIMIT 10",
    ),
    (SKILL, "FROM sales\nSHOW net_sales, total_sales\nTIMESERIES month\nSINCE -3m UNTIL today"),
    (
        SKILL,
        "FROM sales\nSHOW net_sales, total_sales\nSINCE -30d UNTIL today\n"
        "COMPARE TO previous_period",
    ),
    (
        SKILL,
        "FROM sales\nSHOW product_title, net_sales\nGROUP BY product_title\n"
        "ORDER BY net_sales DESC\nLIMIT 10\nVISUALIZE net_sales TYPE bar",
    ),
    (
        SKILL,
        "FROM sales\nSHOW product_title, product_vendor, product_type,\n     net_items_sold, "
        "gross_sales, discounts, returns, net_sales, taxes, total_sales\n"
        "WHERE product_title IS NOT NULL\nGROUP BY product_title, product_vendor, "
        "product_type\nDURING last_month\nORDER BY total_sales DESC\nLIMIT 20",
    ),
    (
        f"{SKILL_EX}/revenue-by-channel.md",
        "FROM sales\nSHOW sales_channel, net_sales\nGROUP BY sales_channel\nTIMESERIES month\n"
        "SINCE -6m UNTIL today",
    ),
    (
        f"{SKILL_EX}/revenue-by-channel.md",
        "FROM sales\nSHOW sales_channel, net_sales, net_items_sold\n"
        "WHERE product_title = 'Classic T-Shirt'\nGROUP BY sales_channel\nSINCE -30d UNTIL today\n"
        "ORDER BY net_sales DESC",
    ),
    (
        f"{SKILL_EX}/top-products-last-30d.md",
        "FROM sales\nSHOW product_title, total_sales\nWHERE product_title IS NOT NULL\n"
        "AND product_type = 'T-Shirts'\nGROUP BY product_title\nSINCE -30d UNTIL today\n"
        "ORDER BY total_sales DESC\nLIMIT 10",
    ),
    (
        HANERU,
        "FROM sales\n  SHOW net_sales\n  GROUP BY product_title WITH TOTALS\n"
        "  SINCE 2024-10-01 UNTIL 2024-10-31\n  ORDER BY net_sales DESC\n  LIMIT 10\n"
        "VISUALIZE net_sales",
    ),
    (SKILL, "FROM ORGANIZATION sales SHOW total_sales GROUP BY store SINCE -30d"),
    # Refused before issue 19 (no shipping address was synced).
    (
        f"{KENYON}/MostShippedCities.js",
        "FROM sales SHOW orders BY shipping_city SINCE -150d ORDER BY orders DESC LIMIT 5 ",
    ),
    # Refused before issue 19: PERCENT_CHANGE without COMPARE TO adds no columns (as in
    # ShopifyQL), and CUMULATIVE_VALUES adds running totals.
    (
        f"{SKILL_EX}/period-comparison.md",
        "FROM sales\nSHOW net_sales\nTIMESERIES month\nSINCE -3m UNTIL today\nWITH PERCENT_CHANGE",
    ),
    (SKILL, "FROM sales\nSHOW net_sales\nTIMESERIES month\nWITH PERCENT_CHANGE, CUMULATIVE_VALUES"),
]

# Parse unchanged, then get a diagnostic naming what Quarry lacks (with a suggestion).
GAPS: list[tuple[str, str, str]] = [
    (
        f"{DOCS}/syntax/group-by",
        "FROM payments SHOW net_payments GROUP BY payment_method WITH TOTALS SINCE -30d "
        "UNTIL today ORDER BY net_payments DESC LIMIT 10",
        # Issue 31: a schema ShopifyQL has is not "unknown"; its data is not synced.
        "ShopifyQL has a 'payments' schema, but Quarry does not sync that data",
    ),
    (
        f"{SKILL_EX}/period-comparison.md",
        "FROM sales\nSHOW net_sales, orders_count\nSINCE -30d UNTIL today\n"
        "COMPARE TO previous_year_match_day_of_week",
        "Unknown field 'orders_count' in sales. Did you mean 'orders'?",
    ),
]


@pytest.mark.parametrize(("source", "text"), RUNS, ids=[f"run{k}" for k in range(len(RUNS))])
def test_runs_unchanged(con: duckdb.DuckDBPyConnection, source: str, text: str) -> None:
    result = run_query(
        con,
        text,
        stores=STORES,
        account_currency=ACCOUNT_CURRENCY,
        account_timezone=ACCOUNT_ZONE,
        now=NOW,
    )
    body = result.public()
    assert body["currency"] == "USD" and body["rows"] is not None, source
    assert {c["name"] for c in body["columns"]} >= {k for row in body["rows"] for k in row}, source


@pytest.mark.parametrize(
    ("source", "text", "message"), GAPS, ids=[f"gap{k}" for k in range(len(GAPS))]
)
def test_gaps_are_explained(
    con: duckdb.DuckDBPyConnection, source: str, text: str, message: str
) -> None:
    assert parse(text)[1] == [], source  # the syntax itself is understood
    with pytest.raises(InvalidQuery) as exc:
        run_query(
            con,
            text,
            stores=STORES,
            account_currency=ACCOUNT_CURRENCY,
            account_timezone=ACCOUNT_ZONE,
            now=NOW,
        )
    assert any(message in str(e["message"]) for e in exc.value.errors), exc.value.errors


def test_at_least_twenty_real_queries() -> None:
    assert len(RUNS) + len(GAPS) >= 25
