"""Signing in and out of the console.

Sign-in takes an API key in a POST body (never a URL), checks it as the API checks a
bearer key (api.auth.principal_of_key: live, charged to its rate limit), and sets the
session cookie: HttpOnly, SameSite=Lax, Secure when the console is reached over HTTPS,
expiring with the session. The sign-in form has its own CSRF token (a double-submit
cookie), since no session exists yet. Sign-out revokes the session in the registry.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse, Response

from api.auth import principal_of_key
from api.console.access import CSRF_FIELD, AnyUser, signed_in
from api.console.pages import PREFIX, ConsolePageError, SignInRequired, render
from api.console.sessions import COOKIE, revoke, start
from quarry.errors import QuarryError

router = APIRouter(prefix=PREFIX, include_in_schema=False)
SIGN_IN_COOKIE = "quarry_console_signin"
CONSOLE_SCOPES = ("exports", "read_data")


def _secure(request: Request) -> bool:
    return request.url.scheme == "https" or request.app.state.settings.public_url.startswith(
        "https:"
    )


def home_of(scopes: tuple[str, ...]) -> str:
    return f"{PREFIX}/exports" if "exports" in scopes else f"{PREFIX}/query"


@router.get("")
def console_home(request: Request) -> Response:
    try:
        user = signed_in(request)
    except SignInRequired:
        return RedirectResponse(f"{PREFIX}/sign-in", status_code=303)
    return RedirectResponse(home_of(user.principal.scopes), status_code=303)


def _sign_in_page(request: Request, error: str | None = None, status: int = 200) -> Response:
    token = secrets.token_urlsafe(24)
    response = render(
        request, "sign_in.html", {"sign_in_token": token, "error": error}, status_code=status
    )
    response.set_cookie(
        SIGN_IN_COOKIE,
        token,
        max_age=3600,
        httponly=True,
        samesite="strict",
        secure=_secure(request),
        path=f"{PREFIX}/sign-in",
    )
    return response


@router.get("/sign-in")
def sign_in_page(request: Request) -> Response:
    return _sign_in_page(request)


@router.post("/sign-in")
def sign_in(
    request: Request,
    api_key: Annotated[str, Form()] = "",
    csrf_token: Annotated[str, Form(alias=CSRF_FIELD)] = "",
) -> Response:
    expected = request.cookies.get(SIGN_IN_COOKIE) or ""
    if not expected or not csrf_token or not hmac.compare_digest(expected, csrf_token):
        return _sign_in_page(request, "The form expired: please sign in again.", 403)
    try:
        principal = principal_of_key(request, api_key.strip())
    except QuarryError as error:
        if error.status == 429:
            raise ConsolePageError(429, error.title, error.detail) from error
        return _sign_in_page(request, "This API key is malformed, unknown or revoked.", 401)
    if not any(scope in principal.scopes for scope in CONSOLE_SCOPES):
        message = "This key has neither the exports nor the read_data scope."
        return _sign_in_page(request, message, 403)
    settings = request.app.state.settings
    with request.app.state.registry.session() as session:
        started = start(
            session, settings.fernet_keys, principal.key_id, settings.console_session_hours
        )
    response = RedirectResponse(home_of(principal.scopes), status_code=303)
    response.set_cookie(
        COOKIE,
        started.cookie,
        expires=started.expires_at,
        httponly=True,
        samesite="lax",
        secure=_secure(request),
        path=PREFIX,
    )
    response.delete_cookie(SIGN_IN_COOKIE, path=f"{PREFIX}/sign-in")
    return response


@router.post("/sign-out")
def sign_out(request: Request, user: AnyUser) -> Response:
    """Revokes the session (CSRF checked as on every form), then forgets the cookie."""
    with request.app.state.registry.session() as session:
        revoke(session, user.session.id)
    response = RedirectResponse(f"{PREFIX}/sign-in", status_code=303)
    response.delete_cookie(COOKIE, path=PREFIX)
    return response
