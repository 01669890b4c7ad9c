"""Orders with their lines, refunds and refund lines -> warehouse rows."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from platforms.shopify.mapping.values import (
    MappingContext,
    Row,
    fulfillment_status,
    lower,
    money,
    person_name,
    sales_channel,
    tags,
    total,
    ts,
)


def order_rows(ctx: MappingContext, order: dict[str, Any]) -> dict[str, list[Row]]:
    oid = ctx.rid(order["id"])
    lines = order.get("lineItems") or []
    customer = order.get("customer") or {}
    billing = order.get("billingAddress") or {}
    row: Row = {
        "id": oid,
        "store_id": ctx.store_id,
        "platform_id": order["id"],
        "order_name": order.get("name"),
        "created_at": ts(order.get("createdAt")),
        "updated_at": ts(order.get("updatedAt")),
        "processed_at": ts(order.get("processedAt")),
        "cancelled_at": ts(order.get("cancelledAt")),
        "currency": order.get("currencyCode") or ctx.currency,
        "financial_status": lower(order.get("displayFinancialStatus")),
        "fulfillment_status": fulfillment_status(order.get("displayFulfillmentStatus")),
        "customer_id": ctx.rid(customer.get("id")),
        "customer_name": person_name(customer),
        "email": order.get("email"),
        "sales_channel": sales_channel(order),
        "billing_country": billing.get("country"),
        "billing_region": billing.get("province"),
        "billing_city": billing.get("city"),
        "tags": tags(order.get("tags")),
        "subtotal_price": money(order.get("subtotalPriceSet")),
        "total_discounts": money(order.get("totalDiscountsSet")),
        "total_shipping": money(order.get("totalShippingPriceSet")),
        "total_tax": money(order.get("totalTaxSet")),
        # Null when the order has no duties or fees: 0 keeps sums simple.
        "total_duties": money(order.get("originalTotalDutiesSet")) or Decimal("0.00"),
        "total_additional_fees": money(order.get("originalTotalAdditionalFeesSet"))
        or Decimal("0.00"),
        "total_price": money(order.get("totalPriceSet")),
        "total_refunded": money(order.get("totalRefundedSet")),
        "line_item_count": len(lines),
        "item_quantity": sum(int(line.get("quantity") or 0) for line in lines),
    }
    refunds = order.get("refunds") or []
    return {
        "orders": [row],
        "order_lines": [line_row(ctx, oid, line) for line in lines],
        "refunds": [refund_row(ctx, oid, refund) for refund in refunds],
        "refund_lines": [
            refund_line_row(ctx, oid, refund, item)
            for refund in refunds
            for item in refund.get("refundLineItems") or []
        ],
    }


def line_row(ctx: MappingContext, order_id: str | None, line: dict[str, Any]) -> Row:
    product = line.get("product") or {}
    variant = line.get("variant") or {}
    return {
        "id": ctx.rid(line["id"]),
        "store_id": ctx.store_id,
        "order_id": order_id,
        "product_id": ctx.rid(product.get("id")),
        "variant_id": ctx.rid(variant.get("id")),
        "product_title": product.get("title") or line.get("title"),
        "product_type": product.get("productType") or None,
        "product_vendor": line.get("vendor") or product.get("vendor"),
        # Not the variant's title: a product without options has one variant titled
        # "Default Title", and its lines have no variantTitle.
        "variant_title": line.get("variantTitle"),
        "sku": line.get("sku") or variant.get("sku") or None,
        "quantity": int(line.get("quantity") or 0),
        # Unit price before discounts; `discount` and `tax` are totals for the line.
        "price": money(line.get("originalUnitPriceSet")),
        "discount": total(
            a.get("allocatedAmountSet") for a in line.get("discountAllocations") or []
        ),
        "tax": total(t.get("priceSet") for t in line.get("taxLines") or []),
    }


def refund_row(ctx: MappingContext, order_id: str | None, refund: dict[str, Any]) -> Row:
    shipping = refund.get("refundShippingLines") or []
    return {
        "id": ctx.rid(refund["id"]),
        "store_id": ctx.store_id,
        "order_id": order_id,
        "created_at": ts(refund.get("createdAt")),
        "shipping": total(s.get("subtotalAmountSet") for s in shipping),
        "shipping_tax": total(s.get("taxAmountSet") for s in shipping),
        "duties": total(d.get("amountSet") for d in refund.get("duties") or []),
        "note": refund.get("note") or None,
    }


def refund_line_row(
    ctx: MappingContext, order_id: str | None, refund: dict[str, Any], item: dict[str, Any]
) -> Row:
    line_gid = (item.get("lineItem") or {}).get("id")
    # Older API versions give refund line items no id: derive a stable one.
    item_gid = item.get("id") or f"{refund['id']}/{line_gid}"
    return {
        "id": ctx.rid(item_gid),
        "store_id": ctx.store_id,
        "order_id": order_id,
        "refund_id": ctx.rid(refund["id"]),
        "line_id": ctx.rid(line_gid),
        "quantity": int(item.get("quantity") or 0),
        "subtotal": money(item.get("subtotalSet")),
        "tax": money(item.get("totalTaxSet")),
    }
