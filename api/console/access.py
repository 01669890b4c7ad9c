"""Who is signed in to the console, and the checks every console request passes.

In the order of the API's own (api.auth): the session (signed in, else the sign-in page),
the key behind it (live: registry.principals loads it by id on every request, as the API
does by secret), the rate limit (charged to the key like an API call), the plan, the
scope the page needs, then CSRF on every POST. The store scope is the Principal's, so a
page shows exactly what the same key reads through the API.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from api.auth import charge
from api.console.pages import ConsolePageError, SignInRequired
from api.console.sessions import COOKIE, Live, find
from quarry.errors import RateLimited
from registry.principals import Principal, load_principal_by_key_id

CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"


@dataclass(frozen=True)
class ConsoleUser:
    principal: Principal
    session: Live

    @property
    def csrf_token(self) -> str:
        return self.session.csrf_token


def signed_in(request: Request) -> ConsoleUser:
    """The live session and its key; SignInRequired otherwise. Charges the key."""
    settings = request.app.state.settings
    registry = request.app.state.registry
    with registry.session() as session:
        live = find(session, settings.fernet_keys, request.cookies.get(COOKIE))
    if live is None:
        raise SignInRequired()
    with registry.engine.connect() as connection:
        principal = load_principal_by_key_id(connection, live.api_key_id)
    if principal is None:  # the key was revoked since
        raise SignInRequired()
    try:
        charge(request, principal)
    except RateLimited as error:
        raise ConsolePageError(429, error.title, error.detail) from error
    if not principal.api_enabled:
        raise ConsolePageError(
            403, "Plan upgrade required", "the account's plan does not include API access"
        )
    user = ConsoleUser(principal, live)
    request.state.console_user = user
    return user


async def check_csrf(request: Request, user: ConsoleUser) -> None:
    """A POST must carry the session's CSRF token, in the form or (htmx) a header."""
    if request.method != "POST":
        return
    given = request.headers.get(CSRF_HEADER)
    if given is None:
        form = await request.form()
        value = form.get(CSRF_FIELD)
        given = value if isinstance(value, str) else None
    if not given or not hmac.compare_digest(given, user.csrf_token):
        raise ConsolePageError(
            403,
            "Form expired",
            "the form's security token is missing or does not match your session; reload "
            "the page and try again",
        )


def needs_scope(scope: str | None) -> Callable[[Request], Awaitable[ConsoleUser]]:
    """A dependency: a signed-in key holding `scope` (None: any key that may sign in),
    with CSRF checked on POST."""

    async def dependency(request: Request) -> ConsoleUser:
        # The registry is synchronous: off the event loop, as FastAPI runs sync deps.
        user = await run_in_threadpool(signed_in, request)
        if scope is not None and scope not in user.principal.scopes:
            raise ConsolePageError(
                403,
                "Insufficient scope",
                f"this page needs a key with the {scope!r} scope; sign in with such a key",
            )
        await check_csrf(request, user)
        return user

    dependency.__name__ = f"console_{scope or 'user'}"
    return dependency


ExportsUser = Annotated[ConsoleUser, Depends(needs_scope("exports"))]
AnyUser = Annotated[ConsoleUser, Depends(needs_scope(None))]
QueryUser = Annotated[ConsoleUser, Depends(needs_scope("read_data"))]
