"""Who is calling and what they may read.

Checks run in this order on every /v1 request: the key (401), the rate limit (429, charged
to the key), the plan (403 "Plan upgrade required"), the scope (403 "Insufficient scope"),
then the request itself. The key is looked up on every request, never cached, so a
revocation takes effect on the next one. `readable_stores` is the one function that says
which stores a request reads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import Connection, bindparam, select

from quarry.errors import Forbidden, InvalidRequest, PlanUpgradeRequired, RateLimited, Unauthorized
from registry.keys import digest, well_formed
from registry.models import Account, ApiKey, Store

bearer = HTTPBearer(
    auto_error=False,
    bearerFormat="qk_...",
    description="An API key: `Authorization: Bearer qk_...`. Keys in the query string are "
    "never accepted.",
)


@dataclass(frozen=True)
class Principal:
    """A live key with its account; `store_ids` are every store the key may read, sorted."""

    key_id: str
    account_id: str
    account_name: str
    subscription_id: str
    api_enabled: bool
    currency: str
    timezone: str
    scopes: tuple[str, ...]
    store_ids: tuple[str, ...]


# One Core query per request for the key, its account and the account's stores: the same
# rules as registry.keys.authenticate (well formed, known digest, not revoked) at a tenth of
# the ORM's cost, which matters on every request.
_PRINCIPAL = (
    select(
        ApiKey.id,
        ApiKey.scopes,
        ApiKey.store_ids,
        Account.id,
        Account.name,
        Account.subscription_id,
        Account.api_enabled,
        Account.currency,
        Account.timezone,
        Store.id,
    )
    .join(Account, Account.id == ApiKey.account_id)
    .outerjoin(Store, Store.account_id == Account.id)
    .where(ApiKey.digest == bindparam("digest"), ApiKey.revoked_at.is_(None))
)


def load_principal(connection: Connection, secret: str) -> Principal | None:
    """The Principal of key `secret`, or None when it is malformed, unknown or revoked."""
    if not well_formed(secret):
        return None
    rows = connection.execute(_PRINCIPAL, {"digest": digest(secret)}).all()
    if not rows:
        return None
    key_id, scopes, key_stores, account_id, name, subscription, enabled, currency, zone, _ = rows[0]
    owned = {row[-1] for row in rows if row[-1] is not None}
    # A key's store list narrows the account's stores; stores removed since drop out.
    allowed = owned if key_stores is None else owned & set(key_stores)
    return Principal(
        key_id=key_id,
        account_id=account_id,
        account_name=name,
        subscription_id=subscription,
        api_enabled=bool(enabled),
        currency=currency,
        timezone=zone,
        scopes=tuple(scopes),
        store_ids=tuple(sorted(allowed)),
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
    with request.app.state.registry.engine.connect() as connection:
        principal = load_principal(connection, credentials.credentials)
    if principal is None:
        raise Unauthorized("the API key is malformed, unknown or revoked")
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
    return principal


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


def readable_stores(
    principal: Principal, requested: Sequence[str] | None, field: str = "store_ids"
) -> tuple[str, ...]:
    """The stores a request reads: every store of the key when `requested` is None, else
    `requested`, which may only narrow. An id that does not exist and an id outside the
    key's stores give the very same 400 naming `field` and the id, so nothing leaks."""
    if requested is None:
        return principal.store_ids
    allowed = set(principal.store_ids)
    for store_id in requested:
        if store_id not in allowed:
            message = f"{store_id!r} is not a store this key can read"
            raise InvalidRequest(
                f"{field}: {message}", errors=[{"field": field, "message": message}]
            )
    return tuple(dict.fromkeys(requested))
