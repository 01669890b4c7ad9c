"""How catalog fields become SQL. The catalog names the fields; this module knows the few
`sales` metrics that are not a stored column (orders, customers, average_order_value),
where each dataset keeps its event time and how an event's local time and date are read.
The checker calls these and writes no SQL of its own."""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal

from warehouse.catalog import Dataset, Field
from warehouse.query.aggregates import BY_NAME as AGGREGATES
from warehouse.query.plan import Arith, Const, MetricExpr, Part, PartRef, Source
from warehouse.query.rates import SPLIT_UNITS
from warehouse.query.sql import Sql
from warehouse.tables import quote_literal

ZERO = Decimal(0)

# ShopifyQL's customers schema has "one row per customer, organized by when they first
# bought" (shopify.dev/docs/api/shopifyql/latest/schemas/customers/customers): the customer
# records of those who ordered, timed by their first order in the store (when it was
# processed, as a sale is), with their last order's time beside it.
_FIRST_ORDERS = (
    "(SELECT c.*, o.first_order_at, o.last_order_at FROM customers c JOIN ("
    "SELECT store_id, customer_id, min(coalesce(processed_at, created_at)) AS first_order_at,"
    " max(coalesce(processed_at, created_at)) AS last_order_at FROM orders"
    " WHERE customer_id IS NOT NULL GROUP BY store_id, customer_id"
    ") o ON o.store_id = c.store_id AND o.customer_id = c.id)"
)

SOURCES = {
    "sales": Source("sales", "happened_at", "happened_at_account", "happened_at_store"),
    "customers": Source(_FIRST_ORDERS, "first_order_at"),
}

# The rollup planner (warehouse.rollups.planner) recognises this aggregate by its text.
ORDERS_SQL = "COUNT(DISTINCT CASE WHEN t.event_type = 'order' THEN t.order_id END)"
# Shopify counts the customers who placed an order in the window: a customer whose only
# event in it is a return is not one of them.
_CUSTOMERS_SQL = "COUNT(DISTINCT CASE WHEN t.event_type = 'order' THEN t.customer_id END)"
# `sales` metrics computed from other columns rather than aggregated from their own: the
# counts and ratios, and the reversal totals, which are the return events' share of a
# column (Shopify's 2026 names for what refunds, returns, edits and cancellations undo).
_REVERSALS = {
    "shipping_reversals": "shipping_charges",
    "tax_reversals": "taxes",
    "total_sales_reversals": "total_sales",
}
_COSTED = "t.cost_is_recorded"
SEMANTIC_METRICS = (
    "orders",
    "customers",
    "returning_customers",
    "returning_customer_rate",
    "average_order_value",
    "net_sales_with_cost_recorded",
    "gross_profit",
    "gross_margin",
    *_REVERSALS,
)

# ShopifyQL's names that Quarry serves under another: the 2026-04 renames of the returns
# fields (the old names stay accepted, as in Shopify until 2027-04) and names of the
# same figure. A column is named as the query wrote it.
ALIASES: dict[str, dict[str, str]] = {
    "sales": {
        "sales_reversals": "returns",
        "net_sales_reversals": "returns",
        "net_returns": "returns",
        "reversed_quantity": "returned_item_quantity",
        "quantity_returned": "returned_item_quantity",
        "shipping_returned": "shipping_reversals",
        "taxes_returned": "tax_reversals",
        "total_returns": "total_sales_reversals",
        # Names public ShopifyQL clients send for figures Quarry has (docs/query-language.md
        # lists each with where it was found).
        "quantity_ordered": "ordered_item_quantity",
        "net_quantity": "net_items_sold",
        "is_canceled_order": "order_cancelled",
    },
    # Record datasets answer to the names ShopifyQL's sales schema gives the same things
    # (`FROM orders SHOW orders GROUP BY order_id` as written for sales), and `orders` to
    # the numeric values of ShopifyQL's orders dataset whose definition is the figure the
    # record holds (shopify.dev/api/shopifyql/datasets/orders-dataset).
    "orders": {
        "orders": "order_count",
        "order_id": "id",
        "discount_code": "discount_codes",
        "additional_fees": "total_additional_fees",
        "discounts": "total_discounts",
        "duties": "total_duties",
        "ordered_product_quantity": "item_quantity",
    },
    # ShopifyQL's customers schema (shopify.dev/docs/api/shopifyql/latest/schemas/customers/
    # customers): its figures that are a customer record's.
    "customers": {
        "customers": "customer_count",
        "customer_id": "id",
        "new_customer_records": "customer_count",
        "total_amount_spent": "total_spent",
        "total_number_of_orders": "orders_count",
        "customer_email": "email",
        "customer_city": "city",
        "customer_country": "country",
    },
    "products": {
        "products": "product_count",
        "product_id": "id",
        "product_title": "title",
        "product_vendor": "vendor",
    },
    "draft_orders": {"draft_orders": "draft_order_count", "draft_order_id": "id"},
}

# Fields a dataset answers in queries only: computed from other tables (the customers
# schema's first and last order) or from other fields, so no record carries them.
QUERY_FIELDS: dict[str, dict[str, Field]] = {
    "customers": {
        f.name: f
        for f in (
            Field(
                "first_order_date",
                "First order date",
                "When the customer's first order in the store was processed (UTC).",
                "date",
                column="first_order_at",
            ),
            Field(
                "last_order_date",
                "Last order date",
                "When the customer's latest order in the store was processed (UTC).",
                "date",
                column="last_order_at",
            ),
            Field(
                "customer_number_of_orders",
                "Number of orders",
                "Orders the customer placed, as a dimension (WHERE customer_number_of_orders > 1).",
                "number",
                column="orders_count",
            ),
            Field(
                "total_amount_spent_per_order",
                "Amount spent per order",
                "Total amount spent / total number of orders.",
                "money",
                "metric",
                "avg",
            ),
        )
    },
}

# Fields of ShopifyQL's `sales` schema that Quarry cannot answer from what it syncs today,
# with the reason a query naming one is told (rather than "unknown field").
NOT_SYNCED: dict[str, dict[str, str]] = {
    "sales": {
        **dict.fromkeys(
            ("gross_sales_reversals", "gross_returns", "discount_reversals", "discounts_returned"),
            "reversals are modelled net of discounts only (sales_reversals)",
        ),
        **dict.fromkeys(
            ("sessions", "conversion_rate", "referrer_source", "utm_campaign_name"),
            "online store sessions and marketing attribution are not synced",
        ),
    },
    # ShopifyQL's orders dataset nets returns and refunds into these; an order record holds
    # the order as placed, and the sales events hold the returns.
    "orders": {
        "gross_sales": "an order record holds its subtotal after discounts, not the items' "
        "value before them: use FROM sales SHOW gross_sales",
        "net_sales": "an order record does not net out returns: use FROM sales SHOW net_sales",
        "returned_product_quantity": "returns are sale events: use FROM sales SHOW "
        "returned_item_quantity",
        "net_product_quantity": "returns are sale events: use FROM sales SHOW net_items_sold",
        "shipping": "ShopifyQL's figure subtracts shipping refunds, an order record's "
        "total_shipping does not: use FROM sales SHOW shipping_charges",
        "taxes": "its definition could not be checked against an order record's: total_tax "
        "is the taxes charged on the order, FROM sales SHOW taxes the sales schema's figure",
    },
    "customers": {
        **dict.fromkeys(
            ("rfm_group", "predicted_spend_tier"),
            "it is Shopify's own scoring of the customer, which Quarry does not sync",
        ),
        **dict.fromkeys(
            ("customer_email_subscription_status", "customer_sms_subscription_status"),
            "Quarry keeps email marketing consent as accepts_marketing (true or false), "
            "not the subscription status",
        ),
        "customer_account_status": "Quarry keeps the account state as `state` "
        "(enabled, disabled, invited), not under Shopify's values",
        "customer_region": "a customer record holds its country and city, not its region",
        "customer_cohort_month": "FROM customers is timed by the first order: GROUP BY month "
        "(or TIMESERIES month) groups customers by the month they first bought",
        "days_since_last_order": "the stored reference does not say how it aggregates over "
        "several customers: GROUP BY last_order_date, or FROM orders",
        "percent_of_customers": "the stored reference does not say which total it is a share of",
    },
}

# What WHERE store = ... filters on: the rollup planner finds the stores a query keeps to
# by this text.
STORE_ID_SQL = "t.store_id"
# The store a row belongs to, by name: a dimension of every dataset (stores are what an
# account's query spans), though only `sales` lists it in the catalog.
STORE = Field("store", "Store", "Name of the store.", "string")

# Is this order the customer's first in its store? Decided over every synced order of the
# customer (not only those in the window), as Shopify's customer_type is. The first orders
# are a relation `fo` (store_id, customer_id, first_order) that the compiler joins to the
# facts when a query's SQL reads it (warehouse.query.compiler), over the stores in scope
# (`{stores}`): one grouped pass over the orders, where a subquery per row cost the
# engine 15-20% more than that pass (DuckDB's decorrelated join, measured at 1M orders).
FIRST_ORDERS_ALIAS = "fo"
FIRST_ORDERS_SQL = (
    "SELECT x.store_id, x.customer_id, arg_min(x.order_id, (x.happened_at, x.order_id)) "
    "AS first_order FROM sales x WHERE x.event_type = 'order' AND x.customer_id IS NOT NULL "
    "AND x.store_id IN ({stores}) GROUP BY 1, 2"
)
_FIRST_ORDER_SQL = f"{FIRST_ORDERS_ALIAS}.first_order"
_CUSTOMER_TYPE_SQL = (
    "CASE WHEN t.customer_id IS NULL THEN NULL WHEN t.order_id = "
    f"{_FIRST_ORDER_SQL} THEN 'First-time' ELSE 'Returning' END"
)
# ShopifyQL's new_or_returning_customer: the same split, as Shopify's clients read it
# ('New' / 'Returning').
_NEW_OR_RETURNING_SQL = _CUSTOMER_TYPE_SQL.replace("'First-time'", "'New'")
# Customers with an order in the window that was not their first: a customer whose first
# and second orders both fall in the window is a customer, and a returning one.
_RETURNING_SQL = (
    "COUNT(DISTINCT CASE WHEN t.event_type = 'order' AND t.customer_id IS NOT NULL AND "
    f"t.order_id <> {_FIRST_ORDER_SQL} THEN t.customer_id END)"
)
# Metrics written as a fraction (Shopify's clients read returning_customer_rate as one:
# 0.2722, not 27.22), rounded to 4 places; see result.metric_value.
RATIO_METRICS = ("returning_customer_rate",)


def lookup(dataset: Dataset, name: str) -> Field | None:
    """The field `name` stands for in `dataset`: its own, an alias's, a query-only one,
    or the store."""
    field = dataset.field(ALIASES.get(dataset.name, {}).get(name, name))
    if field is None:
        field = QUERY_FIELDS.get(dataset.name, {}).get(name)
    if field is None and name == "store":
        return STORE
    return field


def field_names(dataset: Dataset) -> list[Field]:
    """Every field a query may name in `dataset` (for did-you-mean hints)."""
    return [*dataset.fields, *QUERY_FIELDS.get(dataset.name, {}).values()]


def is_semantic(dataset: Dataset, name: str) -> bool:
    """Is `name` a metric computed from other columns, already an aggregate?"""
    if dataset.name == "sales":
        return name in SEMANTIC_METRICS
    return dataset.name == "customers" and name == "total_amount_spent_per_order"


def value_kind(type_: str) -> str:
    """What a value of a field's or a result column's type compares with: every numeric
    type (money, percent, a ratio) with numbers, any other type with its own."""
    return "number" if type_ in ("number", "money", "percent", "ratio") else type_


def source_for(dataset: Dataset) -> Source:
    """Record datasets are timed by created_at and have no precomputed local times."""
    return SOURCES.get(dataset.name) or Source(dataset.table, "created_at")


def dimension_sql(field: Field) -> str:
    if field.name == "store":
        return "s.name"  # the store's name comes from the caller's readable stores
    if field.name == "customer_type":
        return _CUSTOMER_TYPE_SQL
    if field.name == "new_or_returning_customer":
        return _NEW_OR_RETURNING_SQL
    return f"t.{field.source}"


def value_sql(field: Field, fx: bool) -> str:
    """A row's value of `field`; money converted with the row's daily factor."""
    column = _column_sql(field)
    if field.type == "money" and fx:
        return f"({column} * f.factor)"
    return column


# A sum of converted money as value_sql writes it, filtered or not.
_CONVERTED_SUM = re.compile(
    r"^SUM\(\((?P<column>t\.\w+) \* f\.factor\)\)(?P<filter> FILTER \(WHERE .+\))?$"
)


def split_sum_sql(aggregate: str) -> str:
    """`aggregate`, where it is a sum of converted money (SUM((t.x * f.factor)), filtered or
    not), summed over the two halves of the factor (warehouse.query.rates.FACTOR_SCHEMA):
    the same decimal of the same type, DECIMAL(38, 14), from 64-bit products where the
    20-digit factor's take 128 bits (a year's top products by title at 1M orders: a fifth of
    the statement). A half's product past 18 digits, an amount of 10^10 or more in the query's
    currency or its own, raises DuckDB's OutOfRangeException: the executor then runs the
    query with the aggregates as they are. Any other aggregate is returned as it is."""
    match = _CONVERTED_SUM.match(aggregate)
    if match is None:
        return aggregate
    column, only = match["column"], match["filter"] or ""
    high = f"SUM({column} * f.factor_high){only}"
    low = f"SUM({column} * f.factor_low){only}"
    # A literal of scale 12, so the result has the scale of the amount times the factor.
    return f"(({high} * {SPLIT_UNITS} + {low}) * 0.{'0' * 11}1)"


def _column_sql(field: Field) -> str:
    """The stored value of `field`, or for a dimension computed at query time (store,
    customer_type ...) the expression that computes it, as GROUP BY reads it."""
    return dimension_sql(field) if field.role == "dimension" else f"t.{field.source}"


class PartRegistry:
    """Collects SQL aggregates once each; metric expressions refer to them by index."""

    def __init__(self) -> None:
        self.parts: list[Part] = []

    def ref(self, sql: str, empty: Decimal | None) -> MetricExpr:
        for k, part in enumerate(self.parts):
            if part.sql == sql:
                return PartRef(k)
        self.parts.append(Part(sql, empty))
        return PartRef(len(self.parts) - 1)


def aggregate(
    field: Field, func: str, fx: bool, parts: PartRegistry, dataset: Dataset
) -> MetricExpr:
    """The metric expression for func(field), func already validated."""
    if dataset.name == "sales" and field.name in SEMANTIC_METRICS:
        return semantic(field.name, fx, parts, dataset)
    if is_semantic(dataset, field.name):  # the customers schema's amount spent per order
        spent, orders = dataset.field("total_spent"), dataset.field("orders_count")
        assert spent is not None and orders is not None
        return Arith(
            "/",
            parts.ref(f"SUM({value_sql(spent, fx)})", ZERO),
            parts.ref(f"SUM({value_sql(orders, fx)})", ZERO),
        )
    if field.aggregate_only:
        return parts.ref("COUNT(*)", ZERO)
    agg = AGGREGATES[func]
    texts = agg.sql_texts(value_sql(field, fx), _column_sql(field), field.type == "money")
    refs = [parts.ref(text, agg.empty) for text in texts]
    if len(refs) == 1:
        return refs[0]
    numerator, denominator = refs
    return Arith("/", numerator, denominator)


def semantic(name: str, fx: bool, parts: PartRegistry, dataset: Dataset) -> MetricExpr:
    if name == "orders":
        return parts.ref(ORDERS_SQL, ZERO)
    if name == "customers":
        return parts.ref(_CUSTOMERS_SQL, ZERO)
    if name == "returning_customers":
        return parts.ref(_RETURNING_SQL, ZERO)
    if name == "returning_customer_rate":
        return Arith("/", parts.ref(_RETURNING_SQL, ZERO), parts.ref(_CUSTOMERS_SQL, ZERO))
    if name in _REVERSALS:
        column = dataset.field(_REVERSALS[name])
        assert column is not None
        return parts.ref(
            f"SUM({value_sql(column, fx)}) FILTER (WHERE t.event_type = 'return')", ZERO
        )
    if name in ("net_sales_with_cost_recorded", "gross_profit", "gross_margin"):
        # Shopify's profit figures leave out the sales of products without a cost: gross
        # profit is what they sold for less what they cost, the margin its share.
        net_field, cost_field = dataset.field("net_sales"), dataset.field("cost_of_goods_sold")
        assert net_field is not None and cost_field is not None
        costed = parts.ref(f"SUM({value_sql(net_field, fx)}) FILTER (WHERE {_COSTED})", ZERO)
        if name == "net_sales_with_cost_recorded":
            return costed
        cost = parts.ref(f"SUM({value_sql(cost_field, fx)}) FILTER (WHERE {_COSTED})", ZERO)
        profit = Arith("-", costed, cost)
        if name == "gross_profit":
            return profit
        return Arith("*", Arith("/", profit, costed), Const(Decimal(100)))
    gross = dataset.field("gross_sales")
    discounts = dataset.field("discounts")
    assert gross is not None and discounts is not None
    net = Arith(
        "+",
        parts.ref(f"SUM({value_sql(gross, fx)})", ZERO),
        parts.ref(f"SUM({value_sql(discounts, fx)})", ZERO),
    )
    return Arith("/", net, parts.ref(ORDERS_SQL, ZERO))


def zone_time_sql(zone: str, moment: str) -> str:
    """The local time in `zone` of the UTC instant `moment`. The zone is a literal (one of
    the checker's time_zones(), quoted): a time bucket can then be grouped on, GROUPING
    SETS included, without parameters in the grouping."""
    return f"timezone({quote_literal(zone)}, {moment})"


def local_sql(source: Source, zone: str, account_zone: str, store_zones: set[str]) -> Sql:
    """The event's local time in the query zone. Converting at query time is most of
    the cost of a big group-by, so use the column computed at sync when it matches.
    store_zones: the zones of the stores in scope."""
    if source.account_local and zone == account_zone:
        return Sql(f"t.{source.account_local}")
    if source.store_local and store_zones == {zone}:
        return Sql(f"t.{source.store_local}")
    return Sql(zone_time_sql(zone, f"t.{source.time_column}"))


def fx_date_sql(source: Source, store_zones: Mapping[str, str]) -> str:
    """The event's date in its store's zone (store_zones: the zone of each store in scope,
    in scope order): the day whose exchange rate applies. Each zone a literal, chosen by
    store: timezone() with the zone read from a column converts row by row, and took most
    of a FROM customers query at 1M orders."""
    if source.store_local:
        return f"CAST(t.{source.store_local} AS DATE)"
    moment = f"t.{source.time_column}"
    by_zone: dict[str, list[str]] = {}
    for store_id, zone in store_zones.items():
        by_zone.setdefault(zone, []).append(store_id)
    if len(by_zone) <= 1:
        return f"CAST({zone_time_sql(next(iter(by_zone), 'UTC'), moment)} AS DATE)"
    branches = " ".join(
        f"WHEN {STORE_ID_SQL} IN ({', '.join(quote_literal(s) for s in stores)}) "
        f"THEN {zone_time_sql(zone, moment)}"
        for zone, stores in sorted(by_zone.items())
    )
    return f"CAST(CASE {branches} END AS DATE)"
