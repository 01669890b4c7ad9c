"""Rendering console pages: the Jinja2 environment, the page of an error, and the one
exception a console route raises to show one (ConsolePageError), so a person gets a page,
never a problem+json body."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.templating import Jinja2Templates
from starlette.responses import Response

from api.console.times import local_time
from quarry.errors import QuarryError

HERE = Path(__file__).parent
STATIC = HERE / "static"
# The vendored htmx (static/README.md says where it comes from).
HTMX = "htmx-2.0.11.min.js"
PREFIX = "/console"


def errors_for(errors: list[dict[str, str]], key: str) -> list[str]:
    """The messages of `errors` about `key` or anything inside it (`columns` takes
    `columns[2]`, `destination.settings` takes `destination.settings.host`)."""
    return [
        e["message"]
        for e in errors
        if e["field"] == key or e["field"].startswith((f"{key}.", f"{key}["))
    ]


def errors_at(errors: list[dict[str, str]], key: str) -> list[str]:
    """The messages of `errors` about `key` itself, not what is inside it (a bundle's
    `parts` as a whole, not `parts[1].columns`)."""
    return [e["message"] for e in errors if e["field"] == key]


_PART_KEY = re.compile(r"^parts\[([0-9]+)\]\.?([a-z_]*)(?:[.\[]([^\]]*))?")
_PART_FIELDS = {
    "name": "File name in the zip",
    "entity_type": "Data",
    "columns": "Columns",
    "filters": "Filters",
    "query": "Query",
}


def field_label(key: str) -> str | None:
    """How a problem's path inside a bundle's part reads to a person (`parts[1].columns[0]`
    gives `Part 2 · Columns`, `parts[0].filters.financial_status` gives
    `Part 1 · Filters · financial_status`); None for any other path."""
    match = _PART_KEY.match(key)
    if match is None:
        return None
    words = [f"Part {int(match[1]) + 1}"]
    if match[2]:
        words.append(_PART_FIELDS.get(match[2], match[2]))
    if match[2] == "filters" and match[3]:
        words.append(match[3])
    return " · ".join(words)


def field_id(key: str) -> str:
    """An element id for a field path (`destination.settings.host` gives
    `f-destination-settings-host`)."""
    return "f-" + "".join(c if c.isalnum() else "-" for c in key)


templates = Jinja2Templates(directory=str(HERE / "templates"))
templates.env.globals.update(prefix=PREFIX, htmx=HTMX)
templates.env.filters.update(
    errors_for=errors_for,
    errors_at=errors_at,
    field_id=field_id,
    field_label=field_label,
    local_time=local_time,
)


@dataclass
class ConsolePageError(Exception):
    """An error shown to a person as a page with `status`."""

    status: int
    title: str
    detail: str


class SignInRequired(Exception):
    """No live session: the browser goes to the sign-in page."""


@contextmanager
def as_page() -> Iterator[None]:
    """Domain errors (a configuration the key cannot see, a conflict) as a page."""
    try:
        yield
    except QuarryError as error:
        raise ConsolePageError(error.status, error.title, error.detail) from error


def render(
    request: Request, name: str, context: dict[str, Any], status_code: int = 200
) -> Response:
    """Template `name` with `context`; `user` (the signed-in key) when the request has one."""
    values = {"user": getattr(request.state, "console_user", None), **context}
    return templates.TemplateResponse(request, name, values, status_code=status_code)


def error_page(request: Request, error: ConsolePageError) -> Response:
    return render(
        request,
        "error.html",
        {"title": error.title, "detail": error.detail, "status": error.status},
        status_code=error.status,
    )
