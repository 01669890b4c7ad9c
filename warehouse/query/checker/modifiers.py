"""WITH: the modifiers a query turns on, and the currency, zone and week start it names."""

from __future__ import annotations

from collections.abc import Callable, Collection

from quarry.currencies import CURRENCIES
from quarry.zones import time_zones
from warehouse.query import ast
from warehouse.query.checker.state import State
from warehouse.query.dates import WEEKDAYS
from warehouse.query.diagnostics import did_you_mean
from warehouse.query.parser import ATTRIBUTION_MODIFIERS


def _same(value: str) -> str:
    return value


# The modifiers that name a value: how the value is compared, the values allowed, and what
# an error calls it.
_VALUES: dict[str, tuple[Callable[[str], str], Callable[[], Collection[str]], str]] = {
    "CURRENCY": (str.upper, lambda: CURRENCIES, "currency"),
    "TIMEZONE": (_same, time_zones, "time zone"),
    "WEEK_START": (str.lower, lambda: WEEKDAYS, "week start"),
}


def check_modifiers(st: State) -> dict[str, str]:
    """Each modifier given once and valid, by name, with its value ("" for a switch)."""
    seen: dict[str, str] = {}
    for m in st.q.modifiers:
        if m.name in seen:
            st.error(m.pos, f"WITH {m.name} is given twice.")
            continue
        value: str | None = m.value or ""
        if m.name in ATTRIBUTION_MODIFIERS:
            st.error(
                m.pos,
                f"WITH {m.name} credits sales to marketing touchpoints (sessions and "
                "clicks), which Quarry does not sync: it cannot attribute sales.",
            )
        elif m.name in _VALUES:
            value = _value(st, m)
        if value is None:
            continue
        # PERCENT_CHANGE without COMPARE TO adds no columns, as in ShopifyQL.
        seen[m.name] = value
    return seen


def _value(st: State, m: ast.Modifier) -> str | None:
    """The modifier's value as it is compared (CURRENCY 'eur' is EUR), or None once an
    unknown one is reported."""
    normal, allowed, noun = _VALUES[m.name]
    value = normal(m.value or "")
    if value in allowed():
        return value
    hint = did_you_mean(value, allowed())
    st.error(m.value_pos or m.pos, f"Unknown {noun} '{m.value}'.{hint}")
    return None
