"""Daily exchange rates: units of a currency per 1 USD, from a pluggable provider.

The provider interface
----------------------
A rates provider is any object with

    name: str
    def rates(self, start: datetime.date, end: datetime.date) -> pyarrow.Table

`rates` returns one row per day in [start, end] (both included) and per currency it
knows, in the schema of warehouse.schemas.EXCHANGE_RATES: `date` (date32), `base` (always
"USD"), `currency` (ISO 4217 code), `rate` (decimal128(24, 10): units of `currency` that one
USD buys on `date`). USD itself is listed with rate 1. Rows are sorted by date, then
currency. A provider must be deterministic for a given range (the sync writes only when the
table changes) and may raise a QuarryError when its source is unreachable.

`provider(name)` resolves a name from PROVIDERS, or a "package.module:attribute" path to a
class (or factory) taking no arguments, so a live provider plugs in without touching this
module. The built-in `demo` provider ships a deterministic table generated here in code, at
realistic levels around each currency's 2020-2024 average, from 2020-01-01 to 2030-12-31.
"""

from __future__ import annotations

import hashlib
import importlib
import math
from datetime import date, timedelta
from decimal import Decimal
from typing import Protocol, runtime_checkable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from quarry.errors import ConfigurationError
from warehouse.lake import Lake
from warehouse.schemas import EXCHANGE_RATES, RATE
from warehouse.sql_values import bind
from warehouse.writer import upsert_rows

BASE = "USD"
# The days the warehouse keeps rates for (and the demo provider covers); the sync also asks
# for every day up to today once today is past the end.
RATES_START = date(2020, 1, 1)
RATES_END = date(2030, 12, 31)

# Units per USD, near the 2020-2024 averages. Pegged currencies move with their anchor.
DEMO_LEVELS: dict[str, float] = {
    "AUD": 1.48, "BRL": 5.15, "CAD": 1.33, "CHF": 0.92, "CNY": 6.95, "CZK": 22.9,
    "EUR": 0.91, "GBP": 0.79, "HKD": 7.80, "ILS": 3.50, "INR": 79.0, "JPY": 135.0,
    "KRW": 1250.0, "MXN": 18.9, "NOK": 10.0, "NZD": 1.60, "PLN": 4.10, "SEK": 10.2,
    "SGD": 1.35, "ZAR": 16.8,
}  # fmt: skip
DKK_PER_EUR = 7.4604  # ERM II central rate: the krone follows the euro.


@runtime_checkable
class RatesProvider(Protocol):
    """A source of daily USD-based exchange rates (see the module docstring)."""

    name: str

    def rates(self, start: date, end: date) -> pa.Table: ...


class DemoRatesProvider:
    """Deterministic rates: each currency's level times slow waves and a little daily
    noise, all derived from hashes of the currency code, so every machine gets the same
    table without a network."""

    name = "demo"

    def rates(self, start: date, end: date) -> pa.Table:
        start, end = max(start, RATES_START), min(end, RATES_END)
        days = (end - start).days + 1
        if days <= 0:
            return EXCHANGE_RATES.schema.empty_table()
        offset = (start - RATES_START).days
        t = np.arange(offset, offset + days, dtype=np.float64)
        series = {code: level * _wiggle(code, t) for code, level in DEMO_LEVELS.items()}
        series["DKK"] = series["EUR"] * DKK_PER_EUR
        series["HKD"] = DEMO_LEVELS["HKD"] * (1 + 0.1 * (_wiggle("HKD", t) - 1))  # pegged
        series[BASE] = np.ones(days)
        codes = sorted(series)
        dates = [start + timedelta(days=i) for i in range(days)]
        # Six decimals, converted through integers so the decimals are exact.
        micro = np.rint(np.stack([series[c] for c in codes], axis=1) * 1e6).astype(np.int64)
        return pa.table(
            {
                "date": pa.array([d for d in dates for _ in codes], pa.date32()),
                "base": pa.array([BASE] * (days * len(codes)), pa.string()),
                "currency": pa.array(codes * days, pa.string()),
                "rate": pa.array([Decimal(int(v)).scaleb(-6) for v in micro.ravel()], RATE),
            },
            schema=EXCHANGE_RATES.schema,
        )


def _wiggle(code: str, t: np.ndarray) -> np.ndarray:
    """1 plus a few percent of movement: a yearly-ish wave, a two-month wave and noise."""
    seed = int.from_bytes(hashlib.sha256(code.encode()).digest()[:8], "little")
    phase1, phase2 = (seed % 1000) / 1000, (seed // 1000 % 1000) / 1000
    slow = 0.05 * np.sin(2 * math.pi * (t / 500 + phase1))
    fast = 0.012 * np.sin(2 * math.pi * (t / 61 + phase2))
    return 1 + slow + fast + 0.004 * (_unit_noise(seed, t) - 0.5)


def _unit_noise(seed: int, t: np.ndarray) -> np.ndarray:
    """Uniform values in [0, 1) from a splitmix64 hash of (seed, day): the same everywhere."""
    with np.errstate(over="ignore"):
        z = t.astype(np.uint64) + np.uint64(seed)
        z = z * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)


PROVIDERS: dict[str, type] = {"demo": DemoRatesProvider}


def provider(name: str) -> RatesProvider:
    """The provider called `name` (a key of PROVIDERS or "package.module:attribute")."""
    if name in PROVIDERS:
        return PROVIDERS[name]()
    module_name, _, attribute = name.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigurationError(
            f"exchange-rates provider {name!r}: not one of {', '.join(PROVIDERS)} "
            "and not an importable package.module:attribute"
        ) from exc
    made = factory()
    if not isinstance(made, RatesProvider):
        raise ConfigurationError(f"exchange-rates provider {name!r} has no rates(start, end)")
    return made


def write_rates(lake: Lake, rates: pa.Table) -> int:
    """Upsert the rows of `rates` that the exchange_rates table lacks or holds with another
    rate, in one transaction, and none when nothing changed (so a re-run adds no
    snapshot). Returns the rows written."""
    rates = rates.cast(EXCHANGE_RATES.schema)
    if not rates.num_rows:
        return 0
    bounds = pc.min_max(rates["date"]).as_py()
    cursor = lake.cursor()
    try:
        held = cursor.execute(
            bind(
                "SELECT date, base, currency, rate FROM lake.exchange_rates "
                "WHERE date BETWEEN ? AND ?",
                [bounds["min"], bounds["max"]],
            )
        ).to_arrow_table()
    finally:
        cursor.close()
    held = held.cast(EXCHANGE_RATES.schema)
    changed = rates.join(held, keys=["date", "base", "currency", "rate"], join_type="left anti")
    return upsert_rows(lake, "exchange_rates", changed) if changed.num_rows else 0
