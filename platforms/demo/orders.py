"""Orders with their lines, amounts, statuses and refunds.

Amounts hold exactly, in minor units: per line net = price * quantity - discount and tax on
net at the billing country's rate; per order subtotal_price = sum of line nets,
total_discounts = sum of line discounts, total_tax = sum of line taxes + shipping tax,
total_price = subtotal + shipping + duties + additional fees + total_tax, and
total_refunded = the sum of its refunds (see refunds.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from platforms.demo.assortment import Assortment, draw_variants
from platforms.demo.geography import TAX_RATES, TAXES_SHIPPING, indices_of, regions_of
from platforms.demo.hostile import HostileInjector
from platforms.demo.identifiers import gids, record_ids
from platforms.demo.lifecycle import NO_REFUND, settle
from platforms.demo.merchandise import DRAFT_ORDERS, ORDER_TAGS, POINT_OF_SALE, SALES_CHANNELS
from platforms.demo.money import money_array, price_points, round_amounts
from platforms.demo.people import People
from platforms.demo.profile import StoreProfile
from platforms.demo.refunds import RefundBatch, RefundedOrders, build_refunds
from platforms.demo.state import StoreState
from platforms.demo.timeline import timestamps
from platforms.demo.weighted import weighted_choice, weighted_index
from warehouse.schemas import ORDER_LINES, ORDERS

ORDER_NUMBER_BASE = 1000
_CHANNELS = pa.array([name for name, _ in SALES_CHANNELS])
_QUANTITY_WEIGHTS = (78, 15, 5, 1.5, 0.5)
_DISCOUNT_RATES = np.array([0.10, 0.15, 0.20, 0.25])
_SHIPPING_USD = np.array([4.99, 7.99, 12.99])
FREE_SHIPPING_USD = 75.0
DUTY_RATE = 0.05


@dataclass(frozen=True)
class Buyers:
    """Per order: the customer (null id for a guest) and the billing person."""

    customer_id: pa.Array
    name: pa.Array
    email: pa.Array
    country: pa.Array
    city: pa.Array


def buyers(customers: pa.Table, rows: np.ndarray, guests: People) -> Buyers:
    """Buyers of orders placed by customer `rows` (-1: the next of `guests`, in order)."""
    guest = rows < 0
    index = pa.array(np.where(guest, 0, rows), mask=guest)
    mask = pa.array(guest)

    def column(name: str, guest_values: pa.Array) -> pa.Array:
        taken = customers[name].take(index).combine_chunks()
        return pc.replace_with_mask(taken, mask, guest_values) if guest.any() else taken

    return Buyers(
        customer_id=customers["id"].take(index).combine_chunks(),
        name=column("customer_name", guests.name),
        email=column("email", guests.email),
        country=column("country", guests.country),
        city=column("city", guests.city),
    )


def discount_codes(rate: np.ndarray) -> pa.Array:
    """The code a discounted order used (SAVE10 for 10% off), null without a discount."""
    percent = np.rint(rate * 100).astype(np.int64)
    codes = pc.binary_join_element_wise("SAVE", pc.cast(pa.array(percent), pa.string()), "")
    return pc.if_else(pa.array(percent > 0), codes, None)


@dataclass(frozen=True)
class OrderBatch:
    orders: pa.Table
    order_lines: pa.Table
    refunds: pa.Table
    refund_lines: pa.Table


def build_orders(
    rng: np.random.Generator,
    profile: StoreProfile,
    store: StoreState,
    created: np.ndarray,
    buyer: Buyers,
    stock: Assortment,
    clock: int,
    injector: HostileInjector,
) -> OrderBatch:
    """Orders placed at the sorted times `created` by `buyer`, as they stand at `clock`."""
    n = len(created)
    local = store.take_ids("Order", n)
    ids = record_ids(profile.store_id, "Order", local)
    channel = _CHANNELS.take(pa.array(weighted_index(rng, [w for _, w in SALES_CHANNELS], n)))
    at_counter = np.asarray(pc.equal(channel, POINT_OF_SALE).to_numpy(zero_copy_only=False))
    from_draft = np.asarray(pc.equal(channel, DRAFT_ORDERS).to_numpy(zero_copy_only=False))
    country = np.maximum(indices_of(buyer.country), 0)
    rate = TAX_RATES[country]

    # Lines: about 2.5 per order, contiguous per order.
    count = 1 + np.minimum(rng.poisson(1.5, n), 9)
    start = np.cumsum(count) - count
    order_of = np.repeat(np.arange(n), count)
    product_row, variant_row = draw_variants(rng, stock, created[order_of])
    quantity = 1 + weighted_index(rng, _QUANTITY_WEIGHTS, len(order_of))
    price = stock.prices[variant_row]
    cost = stock.costs[variant_row]
    discount_rate = np.where(
        rng.random(n) < 0.22, _DISCOUNT_RATES[rng.integers(0, len(_DISCOUNT_RATES), n)], 0.0
    )
    gross = price * quantity
    discount = np.rint(gross * discount_rate[order_of]).astype(np.int64)
    net = gross - discount
    line_tax = np.rint(net * rate[order_of]).astype(np.int64)

    subtotal = np.add.reduceat(net, start)
    discounts = np.add.reduceat(discount, start)
    units = np.add.reduceat(quantity, start)
    digits, per_usd = profile.digits, profile.per_usd
    international = ~profile.duty_free[country]
    free = subtotal >= round_amounts(np.array([FREE_SHIPPING_USD]), per_usd, digits)[0]
    option = price_points(_SHIPPING_USD, per_usd, digits)[rng.integers(0, len(_SHIPPING_USD), n)]
    option = np.where(international, option * 5 // 2, option)
    ships = ~at_counter & ~(free & (rng.random(n) < 0.85))
    shipping = np.where(ships, option, 0)
    shipping_tax = np.where(TAXES_SHIPPING[country], np.rint(shipping * rate), 0).astype(np.int64)
    duties = np.where(
        international & ~at_counter & (rng.random(n) < 0.6),
        np.rint(subtotal * DUTY_RATE).astype(np.int64),
        0,
    )
    fee = round_amounts(np.array([1.5, 2.0]), per_usd, digits)[rng.integers(0, 2, n)]
    fees = np.where(~at_counter & ~from_draft & (rng.random(n) < 0.03), fee, 0)
    total_tax = np.add.reduceat(line_tax, start) + shipping_tax
    total = subtotal + shipping + duties + fees + total_tax

    life = settle(
        rng,
        created,
        clock,
        at_counter=at_counter,
        line_count=count,
        partial_refundable=~((count == 1) & (units == 1) & (shipping + duties + fees == 0)),
        fully_refundable=fees == 0,
    )
    line_ids = record_ids(profile.store_id, "LineItem", store.take_ids("LineItem", len(order_of)))
    refunded_orders = np.flatnonzero(life.refund != NO_REFUND)
    refund_lines_of = np.isin(order_of, refunded_orders)
    rank = np.full(n, -1)
    rank[refunded_orders] = np.arange(len(refunded_orders))
    batch: RefundBatch = build_refunds(
        rng,
        profile,
        store,
        RefundedOrders(
            order_ids=ids.take(pa.array(refunded_orders)),
            kind=life.refund[refunded_orders],
            two_refunds=life.two_refunds[refunded_orders],
            first_at=life.first_refund_at[refunded_orders],
            second_at=life.second_refund_at[refunded_orders],
            shipping=shipping[refunded_orders],
            shipping_tax=shipping_tax[refunded_orders],
            duties=duties[refunded_orders],
            line_order=rank[order_of[refund_lines_of]],
            line_ids=line_ids.filter(pa.array(refund_lines_of)),
            quantity=quantity[refund_lines_of],
            net=net[refund_lines_of],
            tax=line_tax[refund_lines_of],
        ),
        injector,
    )
    total_refunded = np.zeros(n, dtype=np.int64)
    total_refunded[refunded_orders] = batch.refunded

    store_ids = pa.array([profile.store_id] * n)
    orders = pa.table(
        {
            "id": ids,
            "store_id": store_ids,
            "platform_id": gids("Order", local),
            "order_name": pc.binary_join_element_wise(
                "#", pc.cast(pa.array(local + ORDER_NUMBER_BASE), pa.string()), ""
            ),
            "created_at": timestamps(created),
            "updated_at": timestamps(life.updated),
            "processed_at": timestamps(created),
            "cancelled_at": timestamps(life.cancelled, life.cancelled >= 0),
            "currency": pa.array([profile.currency] * n),
            "financial_status": pa.array(life.financial, pa.string()),
            "fulfillment_status": pa.array(life.fulfillment, pa.string()),
            "customer_id": buyer.customer_id,
            "customer_name": buyer.name,
            "email": buyer.email,
            "sales_channel": channel,
            "billing_country": buyer.country,
            "billing_region": regions_of(buyer.country, buyer.city),
            "billing_city": buyer.city,
            # Shipped orders go to the billing address; a sale at the counter ships nowhere.
            "shipping_country": pc.if_else(pa.array(at_counter), None, buyer.country),
            "shipping_region": pc.if_else(
                pa.array(at_counter), None, regions_of(buyer.country, buyer.city)
            ),
            "shipping_city": pc.if_else(pa.array(at_counter), None, buyer.city),
            "discount_codes": discount_codes(discount_rate),
            "tags": injector.apply(weighted_choice(rng, ORDER_TAGS, n), allow_long=True),
            "subtotal_price": money_array(subtotal, digits),
            "total_discounts": money_array(discounts, digits),
            "total_shipping": money_array(shipping, digits),
            "total_tax": money_array(total_tax, digits),
            "total_duties": money_array(duties, digits),
            "total_additional_fees": money_array(fees, digits),
            "total_price": money_array(total, digits),
            "total_refunded": money_array(total_refunded, digits),
            "line_item_count": pa.array(count.astype(np.int64)),
            "item_quantity": pa.array(units.astype(np.int64)),
        },
        schema=ORDERS.schema,
    )
    products, variants = stock.products, stock.variants
    product_index, variant_index = pa.array(product_row), pa.array(variant_row)
    order_lines = pa.table(
        {
            "id": line_ids,
            "store_id": pa.array([profile.store_id] * len(order_of)),
            "order_id": ids.take(pa.array(order_of)),
            "product_id": products["id"].take(product_index),
            "variant_id": variants["id"].take(variant_index),
            "product_title": products["title"].take(product_index),
            "product_type": products["product_type"].take(product_index),
            "product_vendor": products["vendor"].take(product_index),
            "variant_title": variants["title"].take(variant_index),
            "sku": variants["sku"].take(variant_index),
            "quantity": pa.array(quantity.astype(np.int64)),
            "price": money_array(price, digits),
            "discount": money_array(discount, digits),
            "tax": money_array(line_tax, digits),
            "cost": money_array(np.maximum(cost, 0), digits, mask=cost < 0),
        },
        schema=ORDER_LINES.schema,
    )
    return OrderBatch(orders, order_lines, batch.refunds, batch.refund_lines)
