"""Times on console pages: shown in the account's time zone with the zone named beside
them ("2026-11-27 09:14 Europe/Berlin"), the UTC instant kept machine-readable in a
`<time datetime>` attribute. The registry and the API keep UTC; only the page converts."""

from __future__ import annotations

from datetime import UTC, datetime

from markupsafe import Markup, escape

from quarry.zones import zone_or_utc


def local_time(value: datetime | None, zone: str, seconds: bool = False) -> Markup:
    """`value` (UTC; naive taken as UTC) as a `<time>` element in `zone`; an empty
    string for None."""
    if value is None:
        return Markup("")
    instant = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    instant = instant.astimezone(UTC)
    tz = zone_or_utc(zone)  # the registry checks an account's zone; a page never breaks
    shown = instant.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")
    return Markup('<time datetime="{}">{} {}</time>').format(
        instant.isoformat().replace("+00:00", "Z"), shown, escape(tz.key)
    )
