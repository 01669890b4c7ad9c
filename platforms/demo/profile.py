"""What a store's generators need to know about it: currency, zone, home country, where its
customers come from, and its random streams."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from platforms.demo.geography import FOREIGN_WEIGHTS, country_index, duty_free
from platforms.demo.templates import HOSTILE_STORE_INDEX, StoreTemplate, template_for

# Share of a store's customers from its own country; the rest follow FOREIGN_WEIGHTS.
HOME_SHARE = 0.6


@dataclass(frozen=True)
class StoreProfile:
    store_id: str
    index: int
    template: StoreTemplate
    country_p: np.ndarray
    duty_free: np.ndarray

    @property
    def currency(self) -> str:
        return self.template.currency

    @property
    def digits(self) -> int:
        return self.template.digits

    @property
    def per_usd(self) -> float:
        return self.template.per_usd

    @property
    def timezone(self) -> str:
        return self.template.timezone

    @property
    def hostile(self) -> bool:
        return self.index == HOSTILE_STORE_INDEX


def store_profile(store_id: str, index: int) -> StoreProfile:
    template = template_for(index)
    home = country_index(template.country)
    foreign = FOREIGN_WEIGHTS.copy()
    foreign[home] = 0.0
    country_p = (1 - HOME_SHARE) * foreign / foreign.sum()
    country_p[home] = HOME_SHARE
    return StoreProfile(store_id, index, template, country_p, duty_free(template.country))


def streams(
    seed: int, index: int, step: int, names: tuple[str, ...]
) -> dict[str, np.random.Generator]:
    """Independent generators per named part of a store's work: changing how many values one
    part draws leaves every other part's values as they were. `step` is 0 for the seed and
    the advance's number after it."""
    children = np.random.SeedSequence([seed, index, step]).spawn(len(names))
    return {name: np.random.default_rng(child) for name, child in zip(names, children, strict=True)}
