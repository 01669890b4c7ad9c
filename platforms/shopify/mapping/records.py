"""Customers, products with variants, and draft orders -> warehouse rows."""

from __future__ import annotations

from typing import Any

from platforms.shopify.mapping.values import (
    MappingContext,
    Row,
    lower,
    money,
    person_name,
    tags,
    ts,
)


def customer_rows(ctx: MappingContext, customer: dict[str, Any]) -> dict[str, list[Row]]:
    address = customer.get("defaultAddress") or {}
    email = customer.get("defaultEmailAddress") or {}
    spent = customer.get("amountSpent") or {}
    count = customer.get("numberOfOrders")
    return {
        "customers": [
            {
                "id": ctx.rid(customer["id"]),
                "store_id": ctx.store_id,
                "platform_id": customer["id"],
                "first_name": customer.get("firstName"),
                "last_name": customer.get("lastName"),
                "customer_name": person_name(customer),
                "email": email.get("emailAddress"),
                "country": address.get("country"),
                "city": address.get("city"),
                "state": lower(customer.get("state")),
                "accepts_marketing": email.get("marketingState") == "SUBSCRIBED",
                "tags": tags(customer.get("tags")),
                "created_at": ts(customer.get("createdAt")),
                "updated_at": ts(customer.get("updatedAt")),
                "currency": spent.get("currencyCode") or ctx.currency,
                "orders_count": int(count) if count is not None else None,
                "total_spent": money(spent),
            }
        ]
    }


def product_rows(ctx: MappingContext, product: dict[str, Any]) -> dict[str, list[Row]]:
    pid = ctx.rid(product["id"])
    variants = product.get("variants") or []
    prices = [p for p in (money(v.get("price")) for v in variants) if p is not None]
    return {
        "products": [
            {
                "id": pid,
                "store_id": ctx.store_id,
                "platform_id": product["id"],
                "title": product.get("title"),
                "handle": product.get("handle"),
                "vendor": product.get("vendor"),
                "product_type": product.get("productType") or None,
                "status": lower(product.get("status")),
                "tags": tags(product.get("tags")),
                "created_at": ts(product.get("createdAt")),
                "updated_at": ts(product.get("updatedAt")),
                "currency": ctx.currency,
                "variant_count": len(variants),
                "min_price": min(prices) if prices else None,
                "max_price": max(prices) if prices else None,
                "total_inventory": product.get("totalInventory"),
            }
        ],
        "product_variants": [
            {
                "id": ctx.rid(v["id"]),
                "store_id": ctx.store_id,
                "product_id": pid,
                "title": v.get("title"),
                "sku": v.get("sku") or None,
                "price": money(v.get("price")),
                "cost": money((v.get("inventoryItem") or {}).get("unitCost")),
                "inventory_quantity": v.get("inventoryQuantity"),
                "position": v.get("position"),
            }
            for v in variants
        ],
    }


def draft_order_rows(ctx: MappingContext, draft: dict[str, Any]) -> dict[str, list[Row]]:
    customer = draft.get("customer") or {}
    return {
        "draft_orders": [
            {
                "id": ctx.rid(draft["id"]),
                "store_id": ctx.store_id,
                "platform_id": draft["id"],
                "draft_order_name": draft.get("name"),
                "status": lower(draft.get("status")),
                "created_at": ts(draft.get("createdAt")),
                "updated_at": ts(draft.get("updatedAt")),
                "completed_at": ts(draft.get("completedAt")),
                "order_id": ctx.rid((draft.get("order") or {}).get("id")),
                "customer_id": ctx.rid(customer.get("id")),
                "customer_name": person_name(customer),
                "email": draft.get("email"),
                "currency": draft.get("currencyCode") or ctx.currency,
                "subtotal_price": money(draft.get("subtotalPriceSet")),
                "total_tax": money(draft.get("totalTaxSet")),
                "total_price": money(draft.get("totalPriceSet")),
                "line_item_count": len(draft.get("lineItems") or []),
            }
        ]
    }
