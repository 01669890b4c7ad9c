"""People: names, email addresses and home cities of customers and guest buyers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from platforms.demo import names
from platforms.demo.geography import COUNTRIES, COUNTRY_NAMES, draw_cities
from platforms.demo.hostile import HostileInjector
from platforms.demo.identifiers import joined
from platforms.demo.profile import StoreProfile

_POOL_OF_COUNTRY = np.array([names.POOL_NAMES.index(c.name_pool) for c in COUNTRIES])
# Reserved example domains: the demo never holds a deliverable address.
_DOMAINS = pa.array(["example.com", "example.net", "example.org"])


@dataclass(frozen=True)
class People:
    first_name: pa.Array
    last_name: pa.Array
    name: pa.Array
    email: pa.Array
    country: pa.Array
    city: pa.Array

    def __len__(self) -> int:
        return len(self.first_name)


def generate_people(
    rng: np.random.Generator, profile: StoreProfile, n: int, injector: HostileInjector
) -> People:
    """`n` people from the store's country mix; names and cities may be hostile text."""
    country = np.searchsorted(np.cumsum(profile.country_p), rng.random(n) * profile.country_p.sum())
    country = np.minimum(country, len(COUNTRIES) - 1)
    pool = _POOL_OF_COUNTRY[country]
    first_row = pa.array(names.draw(rng, names.FIRST, pool))
    last_row = pa.array(names.draw(rng, names.LAST, pool))
    first = injector.apply(names.FIRST.names.take(first_row))
    last = injector.apply(names.LAST.names.take(last_row))
    full = pc.if_else(
        pa.array(names.FAMILY_FIRST[pool]),
        joined(last, first, separator=" "),
        joined(first, last, separator=" "),
    )
    number = pc.cast(pa.array(rng.integers(1, 1000, n)), pa.string())
    email = joined(
        names.FIRST.ascii.take(first_row),
        ".",
        names.LAST.ascii.take(last_row),
        number,
        "@",
        _DOMAINS.take(pa.array(rng.integers(0, len(_DOMAINS), n))),
    )
    return People(
        first_name=first,
        last_name=last,
        name=full,
        email=email,
        country=COUNTRY_NAMES.take(pa.array(country)),
        city=injector.apply(draw_cities(rng, country)),
    )
