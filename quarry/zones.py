"""The IANA time zones a client may name: an account's or a store's zone, a query's
(WITH TIMEZONE, `time_zone`), an export's `format_options.time_zone`, a schedule's."""

from __future__ import annotations

import zoneinfo
from functools import cache

# Files of the system's zone folder that are not zones one may name: `localtime` is the
# server's own zone (a client must not depend on where Quarry runs), `posixrules` a
# default of the zone compiler.
_NOT_ZONES = frozenset({"localtime", "posixrules"})


@cache
def time_zones() -> frozenset[str]:
    """Every zone name tzdata knows, but those above. A name is checked against this set,
    never handed to ZoneInfo first: ZoneInfo reads a file named after it, so a path
    (`Europe/../Europe/Berlin`) or a name longer than the file system allows (OSError)
    would reach the disk."""
    return frozenset(zoneinfo.available_timezones()) - _NOT_ZONES


def zone_or_utc(name: str) -> zoneinfo.ZoneInfo:
    """The zone `name`, or UTC when it is none: where an unknown name has been (or will be)
    reported elsewhere and the work must go on (checking a query, showing a page)."""
    return zoneinfo.ZoneInfo(name if name in time_zones() else "UTC")
