"""Complete children: every page of a parent's child connections, and refund details.

A ChangePage must carry *all* children of each parent. Paged queries return the first page
of each child connection; parents with more are completed here one follow-up query at a
time. Refund line items and refund shipping lines are fetched for every refund, for bulk
and paged syncs alike: a bulk query cannot select a connection inside the `refunds` list,
and asking for them inline in paged queries would push a page's cost past Shopify's limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from platforms.shopify import queries as q
from platforms.shopify.client import ShopifyClient


def _rest_of(
    client: ShopifyClient, parent_type: str, parent_id: str, child: q.Child, page: dict[str, Any]
) -> list[dict[str, Any]]:
    """The nodes of connection `page`, followed by every further page of it."""
    nodes = list(page.get("nodes") or [])
    info = page.get("pageInfo") or {}
    document = q.more_children_query(parent_type, child)
    while info.get("hasNextPage"):
        data = client.query(document, {"id": parent_id, "after": info.get("endCursor")})
        connection = (data.get("node") or {}).get(child.field) or {}
        nodes.extend(connection.get("nodes") or [])
        info = connection.get("pageInfo") or {}
    return nodes


def complete_connections(
    client: ShopifyClient, queries: q.DatasetQueries, parents: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """`parents` from a paged query, each child connection replaced by the list of all of
    its nodes."""
    for parent in parents:
        for child in queries.children:
            page = parent.get(child.field) or {}
            parent[child.field] = _rest_of(client, queries.type_name, parent["id"], child, page)
    return parents


def _batches(items: list[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def attach_refund_details(client: ShopifyClient, orders: list[dict[str, Any]]) -> None:
    """Give each refund of `orders` its `refundLineItems` and `refundShippingLines` lists."""
    refunds = [refund for order in orders for refund in order.get("refunds") or []]
    for batch in _batches(refunds, q.REFUNDS_PER_REQUEST):
        data = client.query(q.REFUND_DETAILS, {"ids": [r["id"] for r in batch]})
        details = {n["id"]: n for n in data.get("nodes") or [] if n}
        for refund in batch:
            detail = details.get(refund["id"]) or {}
            for child in (q.REFUND_LINES, q.REFUND_SHIPPING):
                page = detail.get(child.field) or {}
                refund[child.field] = _rest_of(client, "Refund", refund["id"], child, page)
