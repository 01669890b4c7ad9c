"""An advance of the product catalogue: new products, repricing and restocking, publishing
drafts, and deleting a few archived products.

Order lines keep the ids of products deleted later, as a platform's order history does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from platforms.demo.hostile import HostileInjector
from platforms.demo.money import minor_units, money_array, price_points
from platforms.demo.products import generate_products, summarise
from platforms.demo.profile import StoreProfile
from platforms.demo.rows import change_times, drop_rows, pick, replace_rows, without_parents
from platforms.demo.state import StoreState
from platforms.demo.timeline import DAY, timestamps

NEW_PER_PRODUCT_DAY = 1 / 700
UPDATE_PER_DAY = 0.01
DELETE_PER_DAY = 0.01


@dataclass(frozen=True)
class CatalogChanges:
    products: pa.Table
    variants: pa.Table
    added: int
    updated: int
    deleted_ids: pa.Array
    deleted_at: np.ndarray


def advance_catalog(
    rng: np.random.Generator,
    profile: StoreProfile,
    store: StoreState,
    products: pa.Table,
    variants: pa.Table,
    old: int,
    new: int,
    injector: HostileInjector,
) -> CatalogChanges:
    days = (new - old) / DAY
    n = products.num_rows
    everyone = np.arange(n)
    status = products["status"].to_numpy(zero_copy_only=False)
    archived = np.flatnonzero(status == "archived")
    doomed = pick(rng, archived if len(archived) else everyone, DELETE_PER_DAY * days, at_least=1)
    remaining = np.setdiff1d(everyone, doomed)
    changed = pick(rng, remaining, min(0.5, UPDATE_PER_DAY * days), at_least=1)
    changed_at = change_times(rng, len(changed), old, new)

    # Repricing moves each variant of a changed product by up to 10%, restocking adds units.
    owner = pc.index_in(variants["product_id"], value_set=products["id"].take(pa.array(changed)))
    owner = np.asarray(pc.fill_null(owner, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    touched = np.flatnonzero(owner >= 0)
    factor = rng.uniform(0.9, 1.1, len(changed))[owner[touched]]
    usd = (
        minor_units(variants["price"], profile.digits)[touched]
        / 10**profile.digits
        / profile.per_usd
    )
    stock = variants["inventory_quantity"].to_numpy()[touched] + rng.integers(-5, 40, len(touched))
    variants = replace_rows(
        variants,
        touched,
        {
            "price": money_array(
                price_points(usd * factor, profile.per_usd, profile.digits), profile.digits
            ),
            "inventory_quantity": pa.array(stock, pa.int64()),
        },
    )
    published = np.where(status[changed] == "draft", "active", status[changed])
    products = replace_rows(
        products,
        changed,
        {"status": pa.array(published, pa.string()), "updated_at": timestamps(changed_at)},
    )

    deleted_ids = products["id"].take(pa.array(doomed)).combine_chunks()
    products = drop_rows(products, doomed)
    variants = without_parents(variants, "product_id", deleted_ids)

    count = rng.poisson(max(n, 50) * NEW_PER_PRODUCT_DAY * days)
    created = np.sort(change_times(rng, count, old, new))
    fresh, fresh_variants = generate_products(rng, profile, store, created, new, injector)
    products = pa.concat_tables([products, fresh])
    variants = pa.concat_tables([variants, fresh_variants])
    return CatalogChanges(
        products=summarise(products, variants, profile.digits),
        variants=variants,
        added=count,
        updated=len(changed),
        deleted_ids=deleted_ids,
        deleted_at=change_times(rng, len(doomed), old, new),
    )
