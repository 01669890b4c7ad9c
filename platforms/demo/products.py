"""Products and their variants, and the per-product summary columns derived from variants."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from platforms.demo.hostile import HostileInjector
from platforms.demo.identifiers import gids, joined, record_ids
from platforms.demo.merchandise import (
    ADJECTIVES,
    COLORS,
    COLOURED_OPTIONS,
    MATERIALS,
    OPTION_KINDS,
    OPTIONS,
    PRODUCT_TAGS,
    PRODUCT_TYPES,
    VENDORS,
)
from platforms.demo.money import minor_units, money_array, price_points
from platforms.demo.profile import StoreProfile
from platforms.demo.state import StoreState
from platforms.demo.timeline import DAY, timestamps
from platforms.demo.weighted import weighted_choice
from warehouse.schemas import PRODUCT_VARIANTS, PRODUCTS

# Products younger than this may still be drafts; older ones may have been archived.
DRAFT_AGE = 30 * DAY
VENDORS_PER_STORE = 8

_NOUNS = pa.array([n for t in PRODUCT_TYPES for n in t.nouns])
_NOUN_START = np.cumsum([0] + [len(t.nouns) for t in PRODUCT_TYPES])[:-1]
_NOUN_COUNT = np.array([len(t.nouns) for t in PRODUCT_TYPES])
_TYPE_NAMES = pa.array([t.name for t in PRODUCT_TYPES])
_TYPE_CODES = pa.array([t.name[:3].upper() for t in PRODUCT_TYPES])
_TYPE_PRICE = np.array([t.base_price_usd for t in PRODUCT_TYPES])
_TYPE_OPTIONS = np.array([OPTION_KINDS.index(t.options) for t in PRODUCT_TYPES])
_OPTION_TITLES = pa.array([title for k in OPTION_KINDS for title in OPTIONS[k][0]])
_OPTION_FACTORS = np.array([f for k in OPTION_KINDS for f in OPTIONS[k][1]])
_OPTION_START = np.cumsum([0] + [len(OPTIONS[k][0]) for k in OPTION_KINDS])[:-1]
_OPTION_COUNT = np.array([len(OPTIONS[k][0]) for k in OPTION_KINDS])
_OPTION_COLOURED = np.array([k in COLOURED_OPTIONS for k in OPTION_KINDS])


# Unit costs: 30 to 45% of the price by the variant's id; one variant in twelve has no cost
# recorded (Shopify's cost_is_recorded is false for its sales). Derived without the random
# generator, so adding costs left every other generated figure as it was.
_COST_SHARES = np.array([0.30, 0.35, 0.40, 0.45])
NO_COST_EVERY = 12


def variant_costs(price: np.ndarray, variant_local: np.ndarray) -> np.ndarray:
    """Unit cost in minor units per variant, -1 where none is recorded."""
    local = np.asarray(variant_local, dtype=np.int64)
    cost = np.rint(price * _COST_SHARES[local % len(_COST_SHARES)]).astype(np.int64)
    return np.where(local % NO_COST_EVERY == 0, -1, cost)


def store_vendors(index: int) -> pa.Array:
    """The vendors one store buys from: a fixed rotation through VENDORS."""
    return pa.array([VENDORS[(index * 3 + k) % len(VENDORS)] for k in range(VENDORS_PER_STORE)])


def _titles(rng: np.random.Generator, type_idx: np.ndarray) -> pa.Array:
    n = len(type_idx)
    noun = _NOUN_START[type_idx] + (rng.random(n) * _NOUN_COUNT[type_idx]).astype(np.int64)
    adjective = pa.array(ADJECTIVES).take(pa.array(rng.integers(0, len(ADJECTIVES), n)))
    material = pa.array(MATERIALS).take(pa.array(rng.integers(0, len(MATERIALS), n)))
    title = joined(adjective, material, _NOUNS.take(pa.array(noun)), separator=" ")
    return pc.replace_substring(title, "  ", " ")


def _handles(titles: pa.Array, local: np.ndarray) -> pa.Array:
    slug = pc.replace_substring_regex(pc.utf8_lower(titles), r"[^a-z0-9]+", "-")
    return joined(pc.utf8_trim(slug, "-"), pc.cast(pa.array(local), pa.string()), separator="-")


def generate_products(
    rng: np.random.Generator,
    profile: StoreProfile,
    store: StoreState,
    created: np.ndarray,
    clock: int,
    injector: HostileInjector,
) -> tuple[pa.Table, pa.Table]:
    """Products created at the sorted times `created` (seconds) and all their variants, as
    the products and product_variants tables; summary columns filled from the variants."""
    n = len(created)
    local = store.take_ids("Product", n)
    type_idx = rng.integers(0, len(PRODUCT_TYPES), n)
    clean_titles = _titles(rng, type_idx)
    age = clock - created
    status_draw = rng.random(n)
    status = np.where(
        (age < DRAFT_AGE) & (status_draw < 0.4),
        "draft",
        np.where((age >= DRAFT_AGE) & (status_draw < 0.08), "archived", "active"),
    )
    updated = created + ((clock - created) * rng.random(n) ** 3).astype(np.int64)
    ids = record_ids(profile.store_id, "Product", local)

    option = _TYPE_OPTIONS[type_idx]
    counts = np.where(_OPTION_COUNT[option] == 1, 1, rng.integers(1, 6, n))
    counts = np.minimum(counts, _OPTION_COUNT[option])
    colour = pa.array(COLORS).take(pa.array(rng.integers(0, len(COLORS), n)))
    base_usd = _TYPE_PRICE[type_idx] * rng.lognormal(0.0, 0.35, n)

    product_of = np.repeat(np.arange(n), counts)
    starts = np.cumsum(counts) - counts
    position = np.arange(len(product_of)) - starts[product_of]
    option_row = _OPTION_START[option[product_of]] + position
    single = counts[product_of] == 1
    option_title = pc.if_else(
        pa.array(single), "Default Title", _OPTION_TITLES.take(pa.array(option_row))
    )
    coloured = pa.array(_OPTION_COLOURED[option[product_of]] & ~single)
    variant_title = pc.if_else(
        coloured,
        joined(option_title, colour.take(pa.array(product_of)), separator=" / "),
        option_title,
    )
    variant_local = store.take_ids("ProductVariant", len(product_of))
    sku = joined(
        _TYPE_CODES.take(pa.array(type_idx[product_of])),
        pc.cast(pa.array(local[product_of]), pa.string()),
        pc.cast(pa.array(position + 1), pa.string()),
        separator="-",
    )
    price = price_points(
        base_usd[product_of] * _OPTION_FACTORS[option_row], profile.per_usd, profile.digits
    )
    cost = variant_costs(price, variant_local)
    stock = rng.integers(0, 250, len(product_of))
    stock = np.where(rng.random(len(product_of)) < 0.03, -rng.integers(1, 5, len(stock)), stock)
    stock = np.where(status[product_of] == "archived", 0, stock)

    variants = pa.table(
        {
            "id": record_ids(profile.store_id, "ProductVariant", variant_local),
            "store_id": pa.array([profile.store_id] * len(product_of)),
            "product_id": ids.take(pa.array(product_of)),
            "title": injector.apply(variant_title),
            "sku": injector.apply(sku),
            "price": money_array(price, profile.digits),
            "cost": money_array(np.maximum(cost, 0), profile.digits, mask=cost < 0),
            "inventory_quantity": pa.array(stock, pa.int64()),
            "position": pa.array(position + 1, pa.int64()),
        },
        schema=PRODUCT_VARIANTS.schema,
    )
    products = pa.table(
        {
            "id": ids,
            "store_id": pa.array([profile.store_id] * n),
            "platform_id": gids("Product", local),
            "title": injector.apply(clean_titles),
            "handle": _handles(clean_titles, local),
            "vendor": injector.apply(
                store_vendors(profile.index).take(pa.array(rng.integers(0, VENDORS_PER_STORE, n)))
            ),
            "product_type": injector.apply(_TYPE_NAMES.take(pa.array(type_idx))),
            "status": pa.array(status),
            "tags": injector.apply(weighted_choice(rng, PRODUCT_TAGS, n), allow_long=True),
            "created_at": timestamps(created),
            "updated_at": timestamps(updated),
            "currency": pa.array([profile.currency] * n),
            "variant_count": pa.array(np.zeros(n, dtype=np.int64)),
            "min_price": money_array(np.zeros(n, dtype=np.int64), profile.digits),
            "max_price": money_array(np.zeros(n, dtype=np.int64), profile.digits),
            "total_inventory": pa.array(np.zeros(n, dtype=np.int64)),
        },
        schema=PRODUCTS.schema,
    )
    return summarise(products, variants, profile.digits), variants


def summarise(products: pa.Table, variants: pa.Table, digits: int) -> pa.Table:
    """`products` with variant_count, min_price, max_price and total_inventory recomputed
    from `variants`."""
    n = products.num_rows
    owner = pc.index_in(variants["product_id"], value_set=products["id"])
    owner = pc.fill_null(owner, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    known = owner >= 0
    owner = owner[known]
    price = minor_units(variants["price"], digits)[known]
    stock = variants["inventory_quantity"].to_numpy()[known]
    count = np.bincount(owner, minlength=n)
    low = np.full(n, np.iinfo(np.int64).max)
    high = np.zeros(n, dtype=np.int64)
    np.minimum.at(low, owner, price)
    np.maximum.at(high, owner, price)
    low = np.where(count > 0, low, 0)
    inventory = np.bincount(owner, weights=stock, minlength=n).astype(np.int64)
    columns = {
        "variant_count": pa.array(count.astype(np.int64)),
        "min_price": money_array(low, digits),
        "max_price": money_array(high, digits),
        "total_inventory": pa.array(inventory),
    }
    for name, column in columns.items():
        products = products.set_column(products.schema.get_field_index(name), name, column)
    return products
