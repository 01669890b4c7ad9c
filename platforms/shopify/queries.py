"""The GraphQL documents the connector sends, built from one field list per record type.

Every document is named (`query QuarryOrdersPage ...`): the client tracks the cost of each
operation by name, and logs say which one ran.

Amounts are read from `shopMoney` (the shop's currency), never `presentmentMoney`.

Page sizes are chosen so a page's *requested* cost stays well under Shopify's single-query
limit of 1,000 points (a connection costs 2 + first x the cost of one node; each object,
money bag and money inside counts 1). The actual cost, refunded afterwards, is usually far
lower.
"""

from __future__ import annotations

from dataclasses import dataclass

MONEY = "{ shopMoney { amount currencyCode } }"
PAGE_INFO = "pageInfo { hasNextPage endCursor }"

ORDER_FIELDS = f"""
id name createdAt updatedAt processedAt cancelledAt currencyCode
displayFinancialStatus displayFulfillmentStatus email sourceName tags
customer {{ id firstName lastName displayName }}
billingAddress {{ country countryCodeV2 province provinceCode city }}
channelInformation {{ channelDefinition {{ channelName }} app {{ title }} }}
subtotalPriceSet {MONEY}
totalDiscountsSet {MONEY}
totalShippingPriceSet {MONEY}
totalTaxSet {MONEY}
originalTotalDutiesSet {MONEY}
originalTotalAdditionalFeesSet {MONEY}
totalPriceSet {MONEY}
totalRefundedSet {MONEY}
refunds {{ id createdAt note totalRefundedSet {MONEY} duties {{ amountSet {MONEY} }} }}
"""

LINE_ITEM_FIELDS = f"""
id quantity sku title variantTitle vendor
originalUnitPriceSet {MONEY}
discountAllocations {{ allocatedAmountSet {MONEY} }}
taxLines {{ priceSet {MONEY} }}
variant {{ id title sku }}
product {{ id title productType vendor }}
"""

REFUND_LINE_FIELDS = f"id quantity lineItem {{ id }} subtotalSet {MONEY} totalTaxSet {MONEY}"
REFUND_SHIPPING_FIELDS = f"id subtotalAmountSet {MONEY} taxAmountSet {MONEY}"

CUSTOMER_FIELDS = """
id firstName lastName displayName state tags createdAt updatedAt numberOfOrders
defaultEmailAddress { emailAddress marketingState }
amountSpent { amount currencyCode }
defaultAddress { city country countryCodeV2 province }
"""

PRODUCT_FIELDS = """
id title handle vendor productType status tags createdAt updatedAt totalInventory
"""
VARIANT_FIELDS = (
    "id title sku price position inventoryQuantity inventoryItem { unitCost { amount } }"
)

DRAFT_ORDER_FIELDS = f"""
id name status createdAt updatedAt completedAt email currencyCode
order {{ id }}
customer {{ id firstName lastName displayName }}
subtotalPriceSet {MONEY}
totalTaxSet {MONEY}
totalPriceSet {MONEY}
"""
DRAFT_LINE_FIELDS = "id"


@dataclass(frozen=True)
class Child:
    """A child connection of a parent record, e.g. Order.lineItems."""

    field: str
    type_name: str  # the GraphQL type of a child node, as in its gid
    fields: str
    page: int  # children per page in paged queries, next to their parent
    more: int  # children per follow-up query for one parent (<= 1,000 points)


@dataclass(frozen=True)
class DatasetQueries:
    """Everything the connector asks Shopify about one source dataset."""

    dataset: str
    root: str  # the QueryRoot connection: orders, customers, products, draftOrders
    type_name: str  # Order, Customer, Product, DraftOrder
    fields: str
    children: tuple[Child, ...]
    page: int  # parents per page in paged queries
    event_subject: str  # EventSubjectType of deletion events
    count_field: str

    def page_query(self) -> str:
        """Parents updated in a window, oldest update first, with their first children."""
        children = " ".join(
            f"{c.field}(first: {c.page}) {{ {PAGE_INFO} nodes {{ {c.fields} }} }}"
            for c in self.children
        )
        return (
            f"query Quarry{self.type_name}Page($first: Int!, $after: String, $query: String) "
            f"{{ {self.root}(first: $first, after: $after, query: $query, sortKey: UPDATED_AT) "
            f"{{ {PAGE_INFO} nodes {{ {self.fields} {children} }} }} }}"
        )

    def bulk_query(self, search: str) -> str:
        """The query a bulk operation runs: every parent matching `search`, by id."""
        children = " ".join(
            f"{c.field} {{ edges {{ node {{ {c.fields} }} }} }}" for c in self.children
        )
        return (
            f'{{ {self.root}(query: "{search}", sortKey: ID) '
            f"{{ edges {{ node {{ {self.fields} {children} }} }} }} }}"
        )

    def count_query(self) -> str:
        """How many records match `$query` (all when null). limit: null, or Shopify stops
        counting at 10,000; `precision` says whether the count is EXACT."""
        return (
            f"query Quarry{self.type_name}Count($query: String) "
            f"{{ {self.count_field}(query: $query, limit: null) {{ count precision }} }}"
        )

    def nodes_query(self) -> str:
        """Parents by id, shaped as in page_query (re-read after a child-only change)."""
        children = " ".join(
            f"{c.field}(first: {c.page}) {{ {PAGE_INFO} nodes {{ {c.fields} }} }}"
            for c in self.children
        )
        return (
            f"query Quarry{self.type_name}Nodes($ids: [ID!]!) "
            f"{{ nodes(ids: $ids) {{ ... on {self.type_name} {{ {self.fields} {children} }} }} }}"
        )


def more_children_query(parent_type: str, child: Child) -> str:
    """The next page of one parent's children, for parents with more than a page of them."""
    return (
        f"query QuarryMore{parent_type}{child.field[0].upper()}{child.field[1:]}"
        f"($id: ID!, $after: String) {{ node(id: $id) {{ ... on {parent_type} "
        f"{{ {child.field}(first: {child.more}, after: $after) "
        f"{{ {PAGE_INFO} nodes {{ {child.fields} }} }} }} }} }}"
    )


REFUND_LINES = Child("refundLineItems", "RefundLineItem", REFUND_LINE_FIELDS, 25, 150)
REFUND_SHIPPING = Child(
    "refundShippingLines", "RefundShippingLine", REFUND_SHIPPING_FIELDS, 10, 150
)
# Refunds per request: 4 x (1 + 2 + 25 x 6 + 2 + 10 x 5) = 820 points at most.
REFUNDS_PER_REQUEST = 4
REFUND_DETAILS = (
    "query QuarryRefundDetails($ids: [ID!]!) { nodes(ids: $ids) { ... on Refund { id "
    f"{REFUND_LINES.field}(first: {REFUND_LINES.page}) "
    f"{{ {PAGE_INFO} nodes {{ {REFUND_LINES.fields} }} }} "
    f"{REFUND_SHIPPING.field}(first: {REFUND_SHIPPING.page}) "
    f"{{ {PAGE_INFO} nodes {{ {REFUND_SHIPPING.fields} }} }} }} }} }}"
)

ORDERS = DatasetQueries(
    "orders",
    "orders",
    "Order",
    ORDER_FIELDS,
    (Child("lineItems", "LineItem", LINE_ITEM_FIELDS, 10, 80),),
    page=5,
    event_subject="ORDER",
    count_field="ordersCount",
)
CUSTOMERS = DatasetQueries(
    "customers",
    "customers",
    "Customer",
    CUSTOMER_FIELDS,
    (),
    page=50,
    event_subject="CUSTOMER",
    count_field="customersCount",
)
PRODUCTS = DatasetQueries(
    "products",
    "products",
    "Product",
    PRODUCT_FIELDS,
    (Child("variants", "ProductVariant", VARIANT_FIELDS, 20, 250),),
    page=20,
    event_subject="PRODUCT",
    count_field="productsCount",
)
DRAFT_ORDERS = DatasetQueries(
    "draft_orders",
    "draftOrders",
    "DraftOrder",
    DRAFT_ORDER_FIELDS,
    (Child("lineItems", "DraftOrderLineItem", DRAFT_LINE_FIELDS, 50, 250),),
    page=10,
    event_subject="DRAFT_ORDER",
    count_field="draftOrdersCount",
)

DATASETS: dict[str, DatasetQueries] = {
    q.dataset: q for q in (ORDERS, CUSTOMERS, PRODUCTS, DRAFT_ORDERS)
}

SHOP = "query QuarryShop { shop { name currencyCode ianaTimezone createdAt } }"

# Order events that change an order's children without changing the order's updatedAt
# (BasicEvent "Refund" and "Fulfillment" categories, shopify.dev/docs/api/admin-graphql/
# latest/objects/BasicEvent): the orders they name are read again by id.
CHILD_CHANGE_ACTIONS = frozenset(
    {
        "refund_success",
        "refund_pending",
        "refund_failure",
        "fulfillment_success",
        "fulfillment_cancelled",
        "fulfillment_updated",
        "restock_line_items",
    }
)
EVENTS = (
    "query QuarryEvents($first: Int!, $after: String, $query: String!) "
    "{ events(first: $first, after: $after, query: $query, sortKey: CREATED_AT) "
    f"{{ {PAGE_INFO} nodes {{ ... on BasicEvent "
    "{ id action createdAt subjectId subjectType } } } }"
)
WEBHOOK_SUBSCRIBE = (
    "mutation QuarryWebhookSubscribe($topic: WebhookSubscriptionTopic!, $uri: String!) "
    "{ webhookSubscriptionCreate(topic: $topic, webhookSubscription: { uri: $uri }) "
    "{ webhookSubscription { id topic uri } userErrors { field message } } }"
)

# Deletions: the `events` connection (API 2024-10+) records `destroy` actions for orders,
# customers, products and draft orders alike; `deletionEvents` is deprecated and covers
# products and collections only. Events are kept for one year.
DELETIONS = (
    "query QuarryDeletions($first: Int!, $after: String, $query: String!) "
    "{ events(first: $first, after: $after, query: $query, sortKey: CREATED_AT) "
    f"{{ {PAGE_INFO} nodes {{ ... on BasicEvent "
    "{ id action createdAt subjectId subjectType } } } }"
)

BULK_RUN = (
    "mutation QuarryBulkRun($query: String!) { bulkOperationRunQuery(query: $query) "
    "{ bulkOperation { id status } userErrors { field message code } } }"
)
BULK_FIELDS = "id status errorCode objectCount rootObjectCount url partialDataUrl createdAt"
# bulkOperation(id:) from API 2026-01 (shopify.dev/changelog/new-queries-for-bulk-operations);
# node(id:) for stores pinned to an older version.
BULK_OPERATION = (
    f"query QuarryBulkOperation($id: ID!) {{ bulkOperation(id: $id) {{ {BULK_FIELDS} }} }}"
)
BULK_STATUS = (
    "query QuarryBulkStatus($id: ID!) { node(id: $id) { ... on BulkOperation "
    f"{{ {BULK_FIELDS} }} }} }}"
)
# Our running bulk queries (2026-01+), to adopt one an interrupted sync started; it replaces
# currentBulkOperation, which returns only one and is deprecated.
RUNNING_BULK_OPERATIONS = (
    "query QuarryBulkOperations($first: Int!, $query: String!) "
    "{ bulkOperations(first: $first, query: $query) { nodes { id status query } } }"
)
BULK_CANCEL = (
    "mutation QuarryBulkCancel($id: ID!) { bulkOperationCancel(id: $id) "
    "{ bulkOperation { id status } userErrors { field message } } }"
)
# With `query`, so an operation an interrupted sync started can be recognised and adopted.
CURRENT_BULK_WITH_QUERY = (
    "query QuarryCurrentBulk { currentBulkOperation(type: QUERY) { id status query } }"
)
