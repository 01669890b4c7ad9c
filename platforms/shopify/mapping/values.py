"""Shared pieces of the mapping: the context of a store, and Shopify values (money bags,
timestamps, enums, tags, names) turned into column values."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from platforms.ids import record_id
from platforms.shopify.cursor import parse_time

Row = dict[str, Any]
CENT = Decimal("0.01")

FULFILLMENT = {
    "FULFILLED": "fulfilled",
    "PARTIALLY_FULFILLED": "partial",
    "RESTOCKED": "restocked",
    # New in API 2026-10 for orders with nothing left to fulfill (fully cancelled or
    # refunded first); earlier versions said UNFULFILLED, and so does the warehouse, so
    # moving a store to 2026-10 does not change what its rows mean.
    "FULFILLMENT_NOT_REQUIRED": "unfulfilled",
}
# Where channelInformation is missing, the order's sourceName says where it came from.
SOURCE_CHANNELS = {
    "web": "Online Store",
    "pos": "Point of Sale",
    "shopify_draft_order": "Draft Orders",
}


@dataclass(frozen=True)
class MappingContext:
    store_id: str
    currency: str  # the shop's currency, for records that do not state theirs

    def rid(self, gid: str | None) -> str | None:
        return record_id(self.store_id, gid) if gid else None


def money(value: Any) -> Decimal | None:
    """A MoneyBag ({shopMoney: {amount}}), a MoneyV2 ({amount}) or a Money string."""
    if value is None:
        return None
    if isinstance(value, dict):
        value = (value.get("shopMoney") or value).get("amount")
        if value is None:
            return None
    return Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_EVEN)


def total(values: Iterable[Any]) -> Decimal:
    return sum((money(v) or Decimal(0) for v in values), Decimal(0)).quantize(CENT)


def ts(value: str | None) -> datetime | None:
    return parse_time(value) if value else None


def lower(value: str | None) -> str | None:
    return value.lower() if value else None


def tags(value: list[str] | str | None) -> str | None:
    """Shopify's tag list as "a, b"; no tags is None."""
    if not value:
        return None
    return value if isinstance(value, str) else ", ".join(value)


def person_name(person: dict[str, Any] | None) -> str | None:
    """'First Last', else Shopify's displayName (which may be an email address)."""
    if not person:
        return None
    name = " ".join(p for p in (person.get("firstName"), person.get("lastName")) if p).strip()
    return name or person.get("displayName") or None


def fulfillment_status(value: str | None) -> str | None:
    if not value:
        return None
    return FULFILLMENT.get(value, "unfulfilled")


def sales_channel(order: dict[str, Any]) -> str | None:
    info = order.get("channelInformation") or {}
    name = (info.get("channelDefinition") or {}).get("channelName")
    name = name or (info.get("app") or {}).get("title")
    source = order.get("sourceName")
    return name or SOURCE_CHANNELS.get(source or "", source)
