"""Validation of an entry's format options, destination and schedule (exports.configs.document
handles the rest of an entry)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from croniter import croniter

from destinations.kinds import validate_destination
from exports.configs.options import DELIMITERS, FormatOptions
from exports.configs.problems import Problems
from exports.files.formats import FORMATS, MEMBER_FORMATS, options_read
from quarry.errors import InvalidRequest
from quarry.settings import Settings
from registry.accounts import check_timezone

OPTION_KEYS = ("delimiter", "bom", "date_format", "time_zone", "member_format")


def format_options(
    raw: Any, key: str, problems: Problems, file_format: str | None = None
) -> FormatOptions:
    """The options of an entry's `format_options`; with the entry's `file_format`, each
    option given that its writer does not read is a problem too."""
    if raw is None:
        return FormatOptions()
    if not isinstance(raw, dict):
        problems.add(key, "must be a mapping")
        return FormatOptions()
    problems.unknown_keys(key, raw, OPTION_KEYS)
    defaults = FormatOptions()
    if file_format in FORMATS:
        member = raw.get("member_format", defaults.member_format)
        read = options_read(file_format, str(member))
        what = (
            f"a {file_format} file of {member} members"
            if member in FORMATS and FORMATS[file_format].several_tables
            else f"a {file_format} file"
        )
        reads = ", ".join(read) if read else "none"
        for name in raw:
            if name in OPTION_KEYS and name not in read:
                problems.add(f"{key}.{name}", f"does not apply to {what} (it reads: {reads})")
    delimiter = raw.get("delimiter", defaults.delimiter)
    if delimiter not in DELIMITERS:
        problems.add(f"{key}.delimiter", "must be one of " + ", ".join(map(repr, DELIMITERS)))
    bom = raw.get("bom", defaults.bom)
    if not isinstance(bom, bool):
        problems.add(f"{key}.bom", "must be true or false")
    date_format = raw.get("date_format", defaults.date_format)
    if not isinstance(date_format, str) or not date_format or any(c in date_format for c in "\r\n"):
        problems.add(f"{key}.date_format", "must be a one-line strftime format such as %Y-%m-%d")
    else:
        try:
            datetime.now(UTC).strftime(date_format)
        except ValueError as exc:
            problems.add(f"{key}.date_format", f"is not a strftime format ({exc})")
    zone = raw.get("time_zone", defaults.time_zone)
    try:
        check_timezone(str(zone), f"{key}.time_zone")
    except InvalidRequest:
        problems.add(f"{key}.time_zone", f"{zone!r} is not an IANA time zone")
    member_format = raw.get("member_format", defaults.member_format)
    if member_format not in MEMBER_FORMATS:
        problems.add(f"{key}.member_format", "must be one of " + ", ".join(MEMBER_FORMATS))
    return FormatOptions(str(delimiter), bool(bom), str(date_format), str(zone), str(member_format))


def destination(
    raw: Any, key: str, app_settings: Settings, problems: Problems
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    raw = {"kind": "local"} if raw is None else raw
    if not isinstance(raw, dict):
        problems.add(f"{key}.destination", "must be a mapping with kind, settings, credentials")
        return "local", {}, {}
    problems.unknown_keys(f"{key}.destination", raw, ("kind", "settings", "credentials"))
    kind = raw.get("kind", "local")
    settings, credentials = raw.get("settings") or {}, raw.get("credentials") or {}
    try:
        normalised = validate_destination(kind, settings, credentials, app_settings)
    except InvalidRequest as exc:
        problems.absorb(key, exc)
        return str(kind), {}, {}
    return str(kind), normalised, dict(credentials)


def schedule(
    raw: Any, key: str, default_zone: str, problems: Problems
) -> tuple[str | None, str | None]:
    if raw is None:
        return None, None
    if not isinstance(raw, dict):
        problems.add(key, "must be a mapping with cron and timezone")
        return None, None
    problems.unknown_keys(key, raw, ("cron", "timezone"))
    cron, zone = raw.get("cron"), raw.get("timezone", default_zone)
    if not isinstance(cron, str) or not croniter.is_valid(cron):
        problems.add(f"{key}.cron", "must be a cron expression such as '0 6 * * 1'")
        cron = None
    try:
        check_timezone(str(zone))
    except InvalidRequest:
        problems.add(f"{key}.timezone", f"{zone!r} is not an IANA time zone")
    return cron, str(zone)
