"""Who is calling and what they may read.

Checks run in this order on every /v1 request: the key (401), the rate limit (429, charged
to the key), the plan (403 "Plan upgrade required"), the scope (403 "Insufficient scope"),
then the request itself. What a key may read is registry.principals' (the Principal this
module builds from the request); this module keeps only HTTP and the rate limit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from quarry.errors import Forbidden, PlanUpgradeRequired, RateLimited, Unauthorized
from registry.principals import Principal, load_principal

bearer = HTTPBearer(
    auto_error=False,
    bearerFormat="qk_...",
    description="An API key: `Authorization: Bearer qk_...`. Keys in the query string are "
    "never accepted.",
)


def authenticate(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Principal:
    """Any live key (401 otherwise), charged one request against its rate limit."""
    if len(request.headers.getlist("authorization")) > 1:
        # Which one counts would depend on the parser (ours takes the first, a proxy may
        # take the last): refuse rather than guess.
        raise Unauthorized("send exactly one Authorization header")
    if credentials is None:
        raise Unauthorized("send the API key as `Authorization: Bearer <key>`")
    return principal_of_key(request, credentials.credentials)


def principal_of_key(request: Request, secret: str) -> Principal:
    """The live key `secret` (401 otherwise), charged one request against its rate limit:
    the check every way of presenting a key ends in."""
    with request.app.state.registry.engine.connect() as connection:
        principal = load_principal(connection, secret)
    if principal is None:
        raise Unauthorized("the API key is malformed, unknown or revoked")
    charge(request, principal)
    return principal


def charge(request: Request, principal: Principal) -> None:
    """One request against the key's rate limit; RateLimited when it is spent. A request
    that does the work of several (a GraphQL document asking several queries) is charged
    once for each."""
    limiter = request.app.state.limiter
    if limiter is not None:
        decision = limiter.hit(principal.key_id)
        if decision is not None:
            # api.middleware puts X-RateLimit-* on the response, error or not.
            request.state.rate_limit = decision
            if not decision.allowed:
                raise RateLimited(
                    f"rate limit of {limiter.quota.requests} requests per "
                    f"{limiter.quota.seconds:g} seconds reached; retry in "
                    f"{decision.retry_after} s",
                    retry_after=decision.retry_after,
                    limit=decision.limit,
                )


# The checks below touch no I/O: async, so they cost no trip to the thread pool.
async def require_api(principal: Annotated[Principal, Depends(authenticate)]) -> Principal:
    """A live key whose account's plan includes the API."""
    if not principal.api_enabled:
        raise PlanUpgradeRequired(
            "the account's plan does not include API access; GET /v1/account still answers"
        )
    return principal


def require_scope(scope: str) -> Callable[[Principal], Awaitable[Principal]]:
    """A dependency: a live key on an API plan holding `scope`."""

    async def check(principal: Annotated[Principal, Depends(require_api)]) -> Principal:
        if scope not in principal.scopes:
            raise Forbidden(f"this endpoint needs a key with the {scope!r} scope")
        return principal

    check.__name__ = f"require_{scope}"
    return check
