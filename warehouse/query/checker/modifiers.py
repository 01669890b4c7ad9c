"""WITH: the modifiers a query turns on, and the currency, zone and week start it names."""

from __future__ import annotations

import zoneinfo
from collections.abc import Callable, Collection
from functools import cache

from quarry.currencies import CURRENCIES
from warehouse.query import ast
from warehouse.query.checker.state import State
from warehouse.query.dates import WEEKDAYS
from warehouse.query.diagnostics import did_you_mean
from warehouse.query.parser import ATTRIBUTION_MODIFIERS

# Files of the system's zone folder that are not zones one may name: `localtime` is the
# server's own zone (a client must not depend on where Quarry runs), `posixrules` a
# default of the zone compiler.
_NOT_ZONES = frozenset({"localtime", "posixrules"})


@cache
def time_zones() -> frozenset[str]:
    """The IANA zone names a query or a request may name (WITH TIMEZONE, `time_zone`)."""
    return frozenset(zoneinfo.available_timezones()) - _NOT_ZONES


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
