"""The demo account's stores: one template per currency and zone, used in this order."""

from __future__ import annotations

from dataclasses import dataclass

# The third store carries hostile text (see hostile.py); its name has quotes of both kinds.
HOSTILE_STORE_INDEX = 2


@dataclass(frozen=True)
class StoreTemplate:
    name: str
    slug: str
    currency: str
    timezone: str
    country: str
    # Rough units of the currency per US dollar, so prices look native.
    per_usd: float
    # Digits after the decimal point of the currency's minor unit (JPY has none).
    digits: int = 2


TEMPLATES: tuple[StoreTemplate, ...] = (
    StoreTemplate("Northwind Outfitters", "northwind-outfitters", "USD", "America/New_York",
                  "United States", 1.0),
    StoreTemplate("Berliner Werkstatt", "berliner-werkstatt", "EUR", "Europe/Berlin", "Germany",
                  0.92),
    StoreTemplate('Tokyo "Kissa" O\'Brien\'s 東京ストア', "tokyo-kissa-obriens", "JPY",
                  "Asia/Tokyo", "Japan", 150.0, digits=0),
    StoreTemplate("Thames & Tweed", "thames-and-tweed", "GBP", "Europe/London", "United Kingdom",
                  0.79),
    StoreTemplate("Harbour Supply Co.", "harbour-supply", "AUD", "Australia/Sydney", "Australia",
                  1.52),
    StoreTemplate("Maple Trail Goods", "maple-trail-goods", "CAD", "America/Toronto", "Canada",
                  1.37),
    StoreTemplate("Atelier Lumière", "atelier-lumiere", "EUR", "Europe/Paris", "France", 0.92),
    StoreTemplate("Alpenhaus", "alpenhaus", "CHF", "Europe/Zurich", "Switzerland", 0.88),
    StoreTemplate("Nordisk Form", "nordisk-form", "SEK", "Europe/Stockholm", "Sweden", 10.6),
    StoreTemplate("Kiwi Trading Co.", "kiwi-trading", "NZD", "Pacific/Auckland", "New Zealand",
                  1.68),
    StoreTemplate("Casa Aurora", "casa-aurora", "BRL", "America/Sao_Paulo", "Brazil", 5.0),
    StoreTemplate("Mercado Azul", "mercado-azul", "MXN", "America/Mexico_City", "Mexico", 17.0),
)  # fmt: skip


def template_for(index: int) -> StoreTemplate:
    return TEMPLATES[index % len(TEMPLATES)]


def store_name(index: int) -> str:
    """The template's name; later rounds through the templates are numbered ('... 2')."""
    round_ = index // len(TEMPLATES)
    name = template_for(index).name
    return name if round_ == 0 else f"{name} {round_ + 1}"


def store_slug(index: int) -> str:
    round_ = index // len(TEMPLATES)
    slug = template_for(index).slug
    return slug if round_ == 0 else f"{slug}-{round_ + 1}"


def order_shares(stores: int) -> list[float]:
    """How the account's orders split over its stores: the first store is the busiest."""
    weights = [1.0 / (1.0 + 0.35 * i) for i in range(stores)]
    total = sum(weights)
    return [w / total for w in weights]


def split_orders(orders: int, stores: int) -> list[int]:
    """Integer order counts per store summing exactly to `orders`."""
    shares = order_shares(stores)
    counts = [int(orders * s) for s in shares]
    for i in range(orders - sum(counts)):
        counts[i % stores] += 1
    return counts
