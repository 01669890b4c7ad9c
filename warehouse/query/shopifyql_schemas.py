"""What ShopifyQL has that Quarry does not answer, named so a query is told why: the
schemas whose data Quarry does not sync, and the chart types VISUALIZE takes.

Each name comes from Shopify's reference or from public code that sends ShopifyQL;
docs/query-language.md lists the sources."""

from __future__ import annotations

# ShopifyQL schemas (FROM) whose data Quarry does not sync, with what that data is.
UNSYNCED_SCHEMAS: dict[str, str] = {
    "sessions": "online store sessions and visits",
    "inventory": "inventory levels and units sold from stock",
    "payments": "payment transactions",
    "payment_attempts": "payment attempts",
    "fulfillments": "fulfillments, shipping and delivery",
    "discounts": "discount applications",
    "returns": "physical returns and their reasons (Quarry keeps refunds, in FROM sales)",
    "campaign_sales": "sales attributed to marketing campaigns",
    "campaign_products": "products of orders attributed to marketing campaigns",
    "shop_campaign_insights": "Shop Campaigns",
}

# VISUALIZE ... TYPE: the chart types found in Shopify's reference and in queries exported
# from Shopify's editor. ShopifyQL refuses an invalid TYPE with a parse error.
VISUALIZATION_TYPES: tuple[str, ...] = (
    "bar",
    "horizontal_bar",
    "line",
    "table",
    "list_with_dimension_values",
    "donut",
    "histogram",
    "heatmap",
    "single_stat",
)
