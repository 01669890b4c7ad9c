"""Physical tables of the warehouse: Arrow schemas, primary keys, parents of child tables.

Every table is a DuckLake table `lake.<name>` (warehouse.tables) of per-store rows, sorted
by store_id (exchange_rates, which is global, excepted). Amounts are exact decimals in the
store's currency; timestamps are UTC.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from warehouse.rollups import definitions as rollups

MONEY = pa.decimal128(18, 2)
RATE = pa.decimal128(24, 10)
TS = pa.timestamp("us", tz="UTC")
LOCAL_TS = pa.timestamp("us")
STR = pa.string()
INT = pa.int64()


@dataclass(frozen=True)
class TableSpec:
    name: str
    schema: pa.Schema
    primary_key: tuple[str, ...] = ("id",)
    # For child tables: the column naming the parent record and the parent's table.
    parent_key: str | None = None
    parent_table: str | None = None
    per_store: bool = True  # rows of one store each, with a store_id column
    # Rollup tables: the table whose rows they sum (warehouse.rollups), written with it.
    rollup_of: str | None = None


def _schema(*cols: tuple[str, pa.DataType]) -> pa.Schema:
    return pa.schema([pa.field(name, type_) for name, type_ in cols])


ORDERS = TableSpec(
    "orders",
    _schema(
        ("id", STR),
        ("store_id", STR),
        ("platform_id", STR),
        ("order_name", STR),
        ("created_at", TS),
        ("updated_at", TS),
        ("processed_at", TS),
        ("cancelled_at", TS),
        ("currency", STR),
        ("financial_status", STR),
        ("fulfillment_status", STR),
        ("customer_id", STR),
        ("customer_name", STR),
        ("email", STR),
        ("sales_channel", STR),
        ("billing_country", STR),
        ("billing_region", STR),
        ("billing_city", STR),
        ("shipping_country", STR),
        ("shipping_region", STR),
        ("shipping_city", STR),
        ("discount_codes", STR),
        ("tags", STR),
        ("subtotal_price", MONEY),
        ("total_discounts", MONEY),
        ("total_shipping", MONEY),
        ("total_tax", MONEY),
        ("total_duties", MONEY),
        ("total_additional_fees", MONEY),
        ("total_price", MONEY),
        ("total_refunded", MONEY),
        ("line_item_count", INT),
        ("item_quantity", INT),
    ),
)

ORDER_LINES = TableSpec(
    "order_lines",
    _schema(
        ("id", STR),
        ("store_id", STR),
        ("order_id", STR),
        ("product_id", STR),
        ("variant_id", STR),
        ("product_title", STR),
        ("product_type", STR),
        ("product_vendor", STR),
        ("variant_title", STR),
        ("sku", STR),
        ("quantity", INT),
        ("price", MONEY),
        ("discount", MONEY),
        ("tax", MONEY),
        # The variant's unit cost when the order was placed; null when none was recorded.
        ("cost", MONEY),
    ),
    parent_key="order_id",
    parent_table="orders",
)

REFUNDS = TableSpec(
    "refunds",
    _schema(
        ("id", STR),
        ("store_id", STR),
        ("order_id", STR),
        ("created_at", TS),
        ("shipping", MONEY),
        ("shipping_tax", MONEY),
        ("duties", MONEY),
        ("note", STR),
    ),
    parent_key="order_id",
    parent_table="orders",
)

REFUND_LINES = TableSpec(
    "refund_lines",
    _schema(
        ("id", STR),
        ("store_id", STR),
        ("order_id", STR),
        ("refund_id", STR),
        ("line_id", STR),
        ("quantity", INT),
        ("subtotal", MONEY),
        ("tax", MONEY),
    ),
    parent_key="order_id",
    parent_table="orders",
)

CUSTOMERS = TableSpec(
    "customers",
    _schema(
        ("id", STR),
        ("store_id", STR),
        ("platform_id", STR),
        ("first_name", STR),
        ("last_name", STR),
        ("customer_name", STR),
        ("email", STR),
        ("country", STR),
        ("city", STR),
        ("state", STR),
        ("accepts_marketing", pa.bool_()),
        ("tags", STR),
        ("created_at", TS),
        ("updated_at", TS),
        ("currency", STR),
        ("orders_count", INT),
        ("total_spent", MONEY),
    ),
)

PRODUCTS = TableSpec(
    "products",
    _schema(
        ("id", STR),
        ("store_id", STR),
        ("platform_id", STR),
        ("title", STR),
        ("handle", STR),
        ("vendor", STR),
        ("product_type", STR),
        ("status", STR),
        ("tags", STR),
        ("created_at", TS),
        ("updated_at", TS),
        ("currency", STR),
        ("variant_count", INT),
        ("min_price", MONEY),
        ("max_price", MONEY),
        ("total_inventory", INT),
    ),
)

PRODUCT_VARIANTS = TableSpec(
    "product_variants",
    _schema(
        ("id", STR),
        ("store_id", STR),
        ("product_id", STR),
        ("title", STR),
        ("sku", STR),
        ("price", MONEY),
        ("cost", MONEY),  # unit cost (Shopify: the inventory item's unitCost); null if none
        ("inventory_quantity", INT),
        ("position", INT),
    ),
    parent_key="product_id",
    parent_table="products",
)

DRAFT_ORDERS = TableSpec(
    "draft_orders",
    _schema(
        ("id", STR),
        ("store_id", STR),
        ("platform_id", STR),
        ("draft_order_name", STR),
        ("status", STR),
        ("created_at", TS),
        ("updated_at", TS),
        ("completed_at", TS),
        ("order_id", STR),
        ("customer_id", STR),
        ("customer_name", STR),
        ("email", STR),
        ("currency", STR),
        ("subtotal_price", MONEY),
        ("total_tax", MONEY),
        ("total_price", MONEY),
        ("line_item_count", INT),
    ),
)

# One row per sale event; names follow ShopifyQL's `sales` schema (warehouse.catalog.SALES).
# line_type: product | shipping | duty | fee. event_type: order | return.
SALES = TableSpec(
    "sales",
    _schema(
        ("id", STR),
        ("store_id", STR),
        ("order_id", STR),
        ("order_name", STR),
        ("event_type", STR),
        ("line_type", STR),
        ("happened_at", TS),
        ("happened_at_store", LOCAL_TS),
        ("happened_at_account", LOCAL_TS),
        ("currency", STR),
        ("customer_id", STR),
        ("product_id", STR),
        ("product_title", STR),
        ("product_type", STR),
        ("product_vendor", STR),
        ("product_variant_title", STR),
        ("product_variant_sku", STR),
        ("sales_channel", STR),
        ("billing_country", STR),
        ("billing_region", STR),
        ("billing_city", STR),
        ("shipping_country", STR),
        ("shipping_region", STR),
        ("shipping_city", STR),
        ("discount_code", STR),
        ("order_cancelled", pa.bool_()),
        ("cost_is_recorded", pa.bool_()),
        ("ordered_item_quantity", INT),
        ("returned_item_quantity", INT),
        ("net_items_sold", INT),
        ("gross_sales", MONEY),
        ("discounts", MONEY),
        ("returns", MONEY),
        ("net_sales", MONEY),
        ("shipping_charges", MONEY),
        ("duties", MONEY),
        ("additional_fees", MONEY),
        ("taxes", MONEY),
        ("total_sales", MONEY),
        ("cost_of_goods_sold", MONEY),
    ),
    parent_key="order_id",
    parent_table="orders",
)

# Units of `currency` per one unit of `base` (USD) on `date`.
EXCHANGE_RATES = TableSpec(
    "exchange_rates",
    _schema(("date", pa.date32()), ("base", STR), ("currency", STR), ("rate", RATE)),
    primary_key=("date", "base", "currency"),
    per_store=False,
)


def _rollup_spec(rollup: rollups.RollupSet) -> TableSpec:
    """A rollup set's table (warehouse.rollups.definitions): its keys, counts and sums, each
    sum of the facts' type (money stays DECIMAL(18,2): a store's bucket never nears it)."""
    facts = SALES.schema
    key_types = {"happened_at": TS, "happened_at_account": LOCAL_TS, "store_date": pa.date32()}
    columns = [(k, key_types.get(k, STR)) for k in rollup.key_columns]
    columns += [(name, INT) for name, _, _ in rollups.count_columns()]
    columns.append((rollups.ORDERS, INT))
    columns += [(name, facts.field(m).type) for name, m, _ in rollups.stored_measures()]
    return TableSpec(
        rollup.table, _schema(*columns), primary_key=rollup.keys, rollup_of=rollups.FACTS
    )


ROLLUPS: dict[str, TableSpec] = {r.table: _rollup_spec(r) for r in rollups.SETS}

TABLES: dict[str, TableSpec] = {
    t.name: t
    for t in (
        ORDERS,
        ORDER_LINES,
        REFUNDS,
        REFUND_LINES,
        CUSTOMERS,
        PRODUCTS,
        PRODUCT_VARIANTS,
        DRAFT_ORDERS,
        SALES,
        EXCHANGE_RATES,
        *ROLLUPS.values(),
    )
}

# The platform datasets a connector serves, with the tables each one fills
# (the parent first, then its child streams).
SOURCE_DATASETS: dict[str, tuple[str, ...]] = {
    "orders": ("orders", "order_lines", "refunds", "refund_lines"),
    "customers": ("customers",),
    "products": ("products", "product_variants"),
    "draft_orders": ("draft_orders",),
}
