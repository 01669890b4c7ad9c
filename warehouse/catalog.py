"""The catalog: every dataset and field Quarry serves, defined once.

The query endpoint, the record endpoints, exports and docs all read this module. A field's
`column` is the physical column of the dataset's table (or a SQL expression over it for
aggregate-only fields); a published field's name and type never change (contract,
Versioning).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

FieldType = Literal["string", "number", "money", "date", "boolean", "percent"]
Role = Literal["dimension", "metric"]
# warehouse.query.aggregates.NAMES, spelt out for mypy (tests/warehouse/query/test_aggregates.py
# holds the two to the same list).
Aggregation = Literal["sum", "avg", "min", "max", "count", "count_distinct", "median"]
DatasetKind = Literal["query", "records"]


@dataclass(frozen=True)
class Field:
    name: str
    title: str
    description: str
    type: FieldType
    role: Role = "dimension"
    default_aggregation: Aggregation | None = None
    aggregate_only: bool = False
    # Physical column; aggregate-only fields have a SQL expression to aggregate instead.
    column: str | None = None
    # Every value the platform defines for the field (its full enumeration, not the values
    # present in the data), or None when any text is a value. A filter naming another
    # value is an error naming these (warehouse.record_filters); null is always allowed.
    values: tuple[str, ...] | None = None

    @property
    def source(self) -> str:
        return self.column or self.name

    def public(self) -> dict[str, object]:
        """The field as GET /v1/datasets shows it."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "type": self.type,
            "role": self.role,
            "default_aggregation": self.default_aggregation,
            "aggregate_only": self.aggregate_only,
        }


@dataclass(frozen=True)
class Dataset:
    name: str
    title: str
    description: str
    kind: DatasetKind
    table: str
    fields: tuple[Field, ...] = field(default_factory=tuple)

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)

    @property
    def record_fields(self) -> tuple[Field, ...]:
        """Fields a record carries: every field but the aggregate-only ones."""
        return tuple(f for f in self.fields if not f.aggregate_only)

    def public(self) -> dict[str, object]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "kind": self.kind,
            "fields": [f.public() for f in self.fields],
        }


def _dim(name: str, title: str, description: str, type_: FieldType = "string") -> Field:
    return Field(name, title, description, type_)


def _enum(name: str, title: str, description: str, values: tuple[str, ...]) -> Field:
    return Field(name, title, description, "string", values=values)


# Shopify's enumerations, lower-cased as the connectors store them (platforms/shopify/mapping):
# OrderDisplayFinancialStatus, CustomerState, ProductStatus (UNLISTED since 2025-10),
# DraftOrderStatus. Fulfilment is Quarry's own mapping of OrderDisplayFulfillmentStatus.
FINANCIAL_STATUSES = ("pending", "authorized", "partially_paid", "paid", "partially_refunded",
                      "refunded", "voided", "expired")  # fmt: skip
FULFILLMENT_STATUSES = ("fulfilled", "partial", "restocked", "unfulfilled")
CUSTOMER_STATES = ("enabled", "disabled", "invited", "declined")
PRODUCT_STATUSES = ("active", "draft", "archived", "unlisted")
DRAFT_ORDER_STATUSES = ("open", "invoice_sent", "completed")


def _money(name: str, title: str, description: str) -> Field:
    return Field(name, title, description, "money", "metric", "sum")


def _number(name: str, title: str, description: str, agg: Aggregation = "sum") -> Field:
    return Field(name, title, description, "number", "metric", agg)


def _count(name: str, title: str, description: str) -> Field:
    return Field(name, title, description, "number", "metric", "count", True, column="1")


_ID = _dim("id", "ID", "Quarry's record identifier: opaque, URL-safe, unique everywhere.")
_STORE_ID = _dim("store_id", "Store ID", "Identifier of the store the record belongs to.")
_CURRENCY = _dim("currency", "Currency", "ISO 4217 code of the store's currency.")
_CREATED = _dim("created_at", "Created at", "When the record was created (UTC).", "date")
_UPDATED = _dim("updated_at", "Updated at", "When the record last changed (UTC).", "date")
_CUSTOMER_ID = _dim("customer_id", "Customer ID", "Quarry id of the customer, if any.")
_CUSTOMER_NAME = _dim("customer_name", "Customer name", "The customer's full name.")
_EMAIL = _dim("email", "Email", "Contact email address.")

ORDERS = Dataset(
    "orders",
    "Orders",
    "One record per order, with its amounts in the store's currency.",
    "records",
    "orders",
    (
        _ID,
        _STORE_ID,
        _dim("order_name", "Order", "The order's name as the store shows it, e.g. #1001."),
        _CREATED,
        _UPDATED,
        _dim("processed_at", "Processed at", "When the order was processed (UTC).", "date"),
        _dim("cancelled_at", "Cancelled at", "When the order was cancelled (UTC).", "date"),
        _CURRENCY,
        _enum(
            "financial_status",
            "Financial status",
            "paid, pending, partially_refunded, ...",
            FINANCIAL_STATUSES,
        ),
        _enum(
            "fulfillment_status",
            "Fulfillment status",
            "fulfilled, partial or unfulfilled.",
            FULFILLMENT_STATUSES,
        ),
        _CUSTOMER_ID,
        _CUSTOMER_NAME,
        _EMAIL,
        _dim("sales_channel", "Sales channel", "Channel the order came from, e.g. Online Store."),
        _dim("billing_country", "Billing country", "Country of the billing address."),
        _dim("billing_region", "Billing region", "Region or province of the billing address."),
        _dim("billing_city", "Billing city", "City of the billing address."),
        _dim("shipping_country", "Shipping country", "Country of the shipping address."),
        _dim("shipping_region", "Shipping region", "Region or province of the shipping address."),
        _dim("shipping_city", "Shipping city", "City of the shipping address."),
        _dim("discount_codes", "Discount codes", "Comma-separated discount codes used."),
        _dim("tags", "Tags", "Comma-separated tags."),
        _money("subtotal_price", "Subtotal", "Line items after discounts, before shipping, tax."),
        _money("total_discounts", "Discounts", "Total discounts applied to the order."),
        _money("total_shipping", "Shipping", "Shipping charged."),
        _money("total_tax", "Tax", "Taxes charged."),
        _money("total_duties", "Duties", "Duties charged."),
        _money("total_additional_fees", "Additional fees", "Additional fees charged."),
        _money(
            "total_price",
            "Total price",
            "Amount charged: subtotal + shipping + duties + additional fees + tax.",
        ),
        _money("total_refunded", "Refunded", "Total amount refunded so far."),
        _number("line_item_count", "Line items", "Number of line items on the order."),
        _number("item_quantity", "Items", "Units ordered across all line items."),
        _count("order_count", "Orders", "Number of orders (aggregate-only)."),
    ),
)

CUSTOMERS = Dataset(
    "customers",
    "Customers",
    "One record per customer of a store.",
    "records",
    "customers",
    (
        _ID,
        _STORE_ID,
        _dim("first_name", "First name", "Customer's first name."),
        _dim("last_name", "Last name", "Customer's last name."),
        _CUSTOMER_NAME,
        _EMAIL,
        _dim("country", "Country", "Country of the default address."),
        _dim("city", "City", "City of the default address."),
        _enum("state", "State", "Account state: enabled, disabled, invited.", CUSTOMER_STATES),
        _dim("accepts_marketing", "Accepts marketing", "Email marketing consent.", "boolean"),
        _dim("tags", "Tags", "Comma-separated tags."),
        _CREATED,
        _UPDATED,
        _CURRENCY,
        _number("orders_count", "Orders", "Orders the customer placed."),
        _money("total_spent", "Total spent", "Amount the customer spent, store currency."),
        _count("customer_count", "Customers", "Number of customers (aggregate-only)."),
    ),
)

PRODUCTS = Dataset(
    "products",
    "Products",
    "One record per product, with its variant price range.",
    "records",
    "products",
    (
        _ID,
        _STORE_ID,
        _dim("title", "Title", "Product title."),
        _dim("handle", "Handle", "URL handle of the product."),
        _dim("vendor", "Vendor", "Product vendor."),
        _dim("product_type", "Product type", "Product type."),
        _enum("status", "Status", "active, draft or archived.", PRODUCT_STATUSES),
        _dim("tags", "Tags", "Comma-separated tags."),
        _CREATED,
        _UPDATED,
        _CURRENCY,
        _number("variant_count", "Variants", "Number of variants."),
        _money("min_price", "Lowest price", "Lowest variant price."),
        _money("max_price", "Highest price", "Highest variant price."),
        _number("total_inventory", "Inventory", "Units in stock across variants."),
        _count("product_count", "Products", "Number of products (aggregate-only)."),
    ),
)

DRAFT_ORDERS = Dataset(
    "draft_orders",
    "Draft orders",
    "One record per draft order.",
    "records",
    "draft_orders",
    (
        _ID,
        _STORE_ID,
        _dim("draft_order_name", "Draft order", "The draft's name, e.g. #D12."),
        _enum("status", "Status", "open, invoice_sent or completed.", DRAFT_ORDER_STATUSES),
        _CREATED,
        _UPDATED,
        _dim("completed_at", "Completed at", "When the draft became an order (UTC).", "date"),
        _dim("order_id", "Order ID", "Quarry id of the order created from the draft."),
        _CUSTOMER_ID,
        _CUSTOMER_NAME,
        _EMAIL,
        _CURRENCY,
        _money("subtotal_price", "Subtotal", "Line items after discounts."),
        _money("total_tax", "Tax", "Taxes."),
        _money("total_price", "Total price", "Subtotal plus shipping and tax."),
        _number("line_item_count", "Line items", "Number of line items."),
        _count("draft_order_count", "Draft orders", "Number of draft orders (aggregate-only)."),
    ),
)

# Names and meanings follow ShopifyQL's `sales` schema: one row per sale event (an order line
# when ordered, a return when refunded, on the event's own date).
SALES = Dataset(
    "sales",
    "Sales",
    "Sale events: order lines when ordered, returns when refunded, shipping, duties, fees.",
    "query",
    "sales",
    (
        _number("orders", "Orders", "Number of orders.", "count_distinct"),
        _money("gross_sales", "Gross sales", "Price times quantity, before discounts."),
        _money("discounts", "Discounts", "Discounts, as a negative amount."),
        _money("returns", "Returns", "Value of returned items, as a negative amount."),
        _money("net_sales", "Net sales", "Gross sales + discounts + returns."),
        _money("shipping_charges", "Shipping charges", "Shipping charged, less refunds."),
        _money("duties", "Duties", "Duties charged, less refunds."),
        _money("additional_fees", "Additional fees", "Additional fees charged."),
        _money("taxes", "Taxes", "Taxes charged, less refunds."),
        _money(
            "total_sales",
            "Total sales",
            "Net sales + shipping charges + duties + additional fees + taxes.",
        ),
        Field(
            "average_order_value",
            "Average order value",
            "(Gross sales + discounts) / orders.",
            "money",
            "metric",
            "avg",
        ),
        _money(
            "shipping_reversals",
            "Shipping reversals",
            "Shipping refunded (returns, refunds, edits, cancellations), as a negative amount.",
        ),
        _money("tax_reversals", "Tax reversals", "Taxes refunded, as a negative amount."),
        _money(
            "total_sales_reversals",
            "Total sales reversals",
            "Total sales of the return events (everything refunded), as a negative amount.",
        ),
        _money(
            "cost_of_goods_sold",
            "Cost of goods sold",
            "Unit cost x units ordered, less units returned, of lines with a cost recorded.",
        ),
        _money(
            "net_sales_with_cost_recorded",
            "Net sales with cost recorded",
            "Net sales of the product lines whose variant had a cost recorded.",
        ),
        _money(
            "gross_profit",
            "Gross profit",
            "Net sales with cost recorded - cost of goods sold.",
        ),
        Field(
            "gross_margin",
            "Gross margin",
            "Gross profit / net sales with cost recorded, in percent.",
            "percent",
            "metric",
            "avg",
        ),
        _number(
            "customers",
            "Customers",
            "Number of distinct customers who placed an order in the window.",
            "count_distinct",
        ),
        _number(
            "returning_customers",
            "Returning customers",
            "Number of distinct customers who placed an order in the window that was not "
            "their first in its store.",
            "count_distinct",
        ),
        _number(
            "returning_customer_rate",
            "Returning customer rate",
            "Returning customers / customers, as a fraction (0.25 is a quarter).",
            "avg",
        ),
        _number("ordered_item_quantity", "Ordered item quantity", "Units ordered."),
        _number("returned_item_quantity", "Returned item quantity", "Units returned (negative)."),
        _number("net_items_sold", "Net items sold", "Ordered plus returned quantity."),
        _dim("product_id", "Product ID", "Quarry id of the product."),
        _dim("product_title", "Product title", "Product title."),
        _dim("product_type", "Product type", "Product type."),
        _dim("product_vendor", "Product vendor", "Product vendor."),
        _dim("product_variant_title", "Variant title", "Variant title."),
        _dim("product_variant_sku", "Variant SKU", "Variant SKU."),
        _dim("sales_channel", "Sales channel", "Channel the order came from."),
        _dim("billing_country", "Billing country", "Country of the billing address."),
        _dim("billing_region", "Billing region", "Region of the billing address."),
        _dim("billing_city", "Billing city", "City of the billing address."),
        _dim("shipping_country", "Shipping country", "Country of the order's shipping address."),
        _dim("shipping_region", "Shipping region", "Region of the order's shipping address."),
        _dim("shipping_city", "Shipping city", "City of the order's shipping address."),
        _dim("discount_code", "Discount code", "Discount codes the order used, comma-separated."),
        _dim(
            "order_cancelled",
            "Order cancelled",
            "Whether the order has been cancelled (its refunds carry the reversal).",
            "boolean",
        ),
        _dim(
            "cost_is_recorded",
            "Cost is recorded",
            "Whether the line's product variant had a unit cost recorded.",
            "boolean",
        ),
        _dim("customer_id", "Customer ID", "Quarry id of the customer."),
        _dim(
            "customer_type",
            "Customer type",
            "First-time when the order is the customer's first in its store, else Returning; "
            "null without a customer.",
        ),
        _dim(
            "new_or_returning_customer",
            "New or returning customer",
            "New when the order is the customer's first in its store, else Returning; null "
            "without a customer.",
        ),
        _dim("order_name", "Order", "The order's name."),
        _dim("order_id", "Order ID", "Quarry id of the order."),
        _dim("store", "Store", "Name of the store."),
        _dim("store_id", "Store ID", "Identifier of the store."),
    ),
)

DATASETS: tuple[Dataset, ...] = (SALES, ORDERS, CUSTOMERS, PRODUCTS, DRAFT_ORDERS)
RECORD_DATASETS: tuple[str, ...] = tuple(d.name for d in DATASETS if d.kind == "records")


def dataset(name: str) -> Dataset | None:
    """The dataset called `name`, or None."""
    return next((d for d in DATASETS if d.name == name), None)
