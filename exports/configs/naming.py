"""File-name templates: the name a person sees (download and destination).

Tokens: `{name}` (the configuration's name), `{date}` or `{date:<strftime>}` (the job's
creation time in the account's zone; `{date}` is `{date:%Y-%m-%d}`), `{job_id}`, and
`{store}` (the store's name when the export covers one store, else "<n>-stores"). `{{` and
`}}` are literal braces. The format's extension is added unless the name already ends in
it. Files on disk are stored under the job id; this name never reaches a local path.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Sequence
from datetime import datetime
from zoneinfo import ZoneInfo

from exports.files.formats import EXTENSIONS

TOKENS = ("name", "date", "job_id", "store")
DEFAULT_TEMPLATE = "{name}-{date:%Y%m%d-%H%M%S}-{job_id}"
MAX_FILE_NAME = 200
_UNSAFE = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]')


def template_errors(template: str) -> list[str]:
    """What is wrong with `template` (empty when it is usable)."""
    if not isinstance(template, str) or not template.strip():
        return ["must be a non-empty string"]
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError as exc:
        return [f"is not a valid template ({exc}); write {{{{ and }}}} for literal braces"]
    problems = []
    for _, field, spec, conversion in fields:
        if field is None:
            continue
        if field not in TOKENS:
            problems.append(f"unknown token {{{field}}}; known: " + ", ".join(TOKENS))
        elif conversion or (spec and field != "date"):
            problems.append(f"{{{field}}} takes no format or conversion")
    return problems


def store_label(store_names: Sequence[str]) -> str:
    return store_names[0] if len(store_names) == 1 else f"{len(store_names)}-stores"


def render_file_name(
    template: str,
    *,
    name: str,
    job_id: str,
    created_at: datetime,
    zone: str,
    store_names: Sequence[str],
    file_format: str,
) -> str:
    """The file name for one job: tokens resolved, unsafe characters replaced by `_`, at
    most MAX_FILE_NAME characters, ending in the format's extension."""
    local = created_at.astimezone(ZoneInfo(zone))
    parts: list[str] = []
    for literal, field, spec, _ in string.Formatter().parse(template):
        parts.append(literal)
        if field == "date":
            parts.append(local.strftime(spec or "%Y-%m-%d"))
        elif field is not None:
            values = {"name": name, "job_id": job_id, "store": store_label(store_names)}
            parts.append(values[field])
    return safe_file_name("".join(parts), EXTENSIONS[file_format])


def safe_file_name(raw: str, extension: str) -> str:
    cleaned = _UNSAFE.sub("_", unicodedata.normalize("NFC", raw)).strip(" .")
    if cleaned.lower().endswith(extension):
        cleaned = cleaned[: -len(extension)]
    cleaned = cleaned[: MAX_FILE_NAME - len(extension)].rstrip(" .") or "export"
    return cleaned + extension
