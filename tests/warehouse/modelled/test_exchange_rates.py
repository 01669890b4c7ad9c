"""The demo rates provider and writing rates into the warehouse."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pyarrow.compute as pc
import pytest

from quarry.errors import ConfigurationError
from warehouse.lake import Lake
from warehouse.modelled.exchange_rates import (
    DEMO_LEVELS,
    RATES_END,
    RATES_START,
    DemoRatesProvider,
    RatesProvider,
    provider,
    write_rates,
)
from warehouse.schemas import EXCHANGE_RATES


@pytest.fixture(scope="module")
def rates():
    return DemoRatesProvider().rates(RATES_START, RATES_END)


def test_covers_every_day_of_2020_to_2030_for_every_currency(rates) -> None:
    days = (RATES_END - RATES_START).days + 1
    currencies = {*DEMO_LEVELS, "DKK", "USD"}
    assert rates.schema == EXCHANGE_RATES.schema
    assert rates.num_rows == days * len(currencies)
    assert set(pc.unique(rates["currency"]).to_pylist()) == currencies
    assert pc.min_max(rates["date"]).as_py() == {"min": RATES_START, "max": RATES_END}
    assert set(pc.unique(rates["base"]).to_pylist()) == {"USD"}
    usd = rates.filter(pc.equal(rates["currency"], "USD"))
    assert set(usd["rate"].to_pylist()) == {Decimal(1)}


@pytest.mark.parametrize(
    ("currency", "low", "high"),
    [("EUR", "0.80", "1.00"), ("JPY", "120", "150"), ("GBP", "0.70", "0.88"),
     ("CHF", "0.82", "1.02"), ("AUD", "1.30", "1.65"), ("CAD", "1.18", "1.48")],
)  # fmt: skip
def test_levels_stay_near_real_averages(rates, currency: str, low: str, high: str) -> None:
    values = rates.filter(pc.equal(rates["currency"], currency))["rate"]
    bounds = pc.min_max(values).as_py()
    assert Decimal(low) < bounds["min"] and bounds["max"] < Decimal(high)
    # Rates move from day to day, but not wildly.
    assert pc.count_distinct(values).as_py() > 1000


def test_deterministic_and_consistent_across_ranges(rates) -> None:
    again = DemoRatesProvider().rates(date(2024, 2, 28), date(2024, 3, 1))
    assert again.num_rows == 3 * len(set(rates["currency"].to_pylist()))
    window = rates.filter(
        pc.and_(pc.greater_equal(rates["date"], date(2024, 2, 28)),
                pc.less_equal(rates["date"], date(2024, 3, 1)))
    )  # fmt: skip
    assert window.equals(again)


def test_provider_lookup() -> None:
    assert isinstance(provider("demo"), RatesProvider)
    made = provider("warehouse.modelled.exchange_rates:DemoRatesProvider")
    assert made.name == "demo"
    with pytest.raises(ConfigurationError, match="nowhere"):
        provider("nowhere.module:Thing")


def test_write_rates_commits_only_changes(lake: Lake) -> None:
    demo = DemoRatesProvider()
    first = demo.rates(date(2024, 1, 1), date(2024, 1, 31))
    assert write_rates(lake, first) == first.num_rows
    version = lake.version()
    assert write_rates(lake, first) == 0
    assert lake.version() == version
    # A later range adds its days and keeps the earlier ones.
    later = demo.rates(date(2024, 1, 31), date(2024, 2, 2))
    days = len(set(later["currency"].to_pylist()))
    assert write_rates(lake, later) == 2 * days
    cursor = lake.cursor()
    stored = cursor.execute("SELECT * FROM lake.exchange_rates").to_arrow_table()
    cursor.close()
    assert stored.num_rows == first.num_rows + 2 * days
