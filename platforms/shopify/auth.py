"""Access tokens: a static `shpat_` token, or expiring tokens of the client-credentials grant.

Dev Dashboard apps (the only kind a merchant can create since 1 January 2026) exchange their
client id and secret for a token at `POST https://{shop}.myshopify.com/admin/oauth/access_token`
(form-encoded `grant_type=client_credentials`, `client_id`, `client_secret`); the answer
carries `access_token`, `scope` and `expires_in` (seconds; 24 hours today). See
shopify.dev/docs/apps/build/authentication-authorization/access-tokens/client-credentials-grant.

`AccessTokens.current()` renews the token `token_refresh_margin_seconds` before it expires;
`renew()` is what the client calls once when Shopify answers 401 to a token it still
believed valid (revoked, or a clock that drifted). One holder is shared by every client of
a connector, and `shared_tokens` gives every connector of one process the same holder for
the same app and shop: a Dagster run syncs four datasets and counts for the checks with
one token, not one per connector.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable

import httpx

from platforms.shopify.errors import ShopifyAuthError, ShopifyError
from platforms.shopify.settings import ShopConnection, ShopifySettings

log = logging.getLogger(__name__)


def admin_base(settings: ShopifySettings, domain: str) -> str:
    """The shop's address: https://{domain}, or the QUARRY_SHOPIFY_BASE_URL override."""
    base = (settings.base_url or "https://{domain}").replace("{domain}", domain)
    return base.rstrip("/")


class AccessTokens:
    """The access token of one connection, renewed before it expires."""

    def __init__(
        self,
        connection: ShopConnection,
        settings: ShopifySettings,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.connection = connection
        self.settings = settings
        self._clock = clock
        self._lock = threading.Lock()
        self._token: str | None = connection.token
        self._expires_at: float | None = None
        self.scope: str | None = None
        self.grants = 0  # tokens obtained, for logs and tests

    @property
    def renewable(self) -> bool:
        return self.connection.uses_client_credentials

    def current(self) -> str:
        """A token valid for at least the refresh margin."""
        with self._lock:
            if not self.renewable:
                assert self._token is not None  # ShopConnection guarantees one
                return self._token
            margin = self.settings.token_refresh_margin_seconds
            if (
                self._token is None
                or self._expires_at is None
                or self._clock() >= self._expires_at - margin
            ):
                self._grant()
            assert self._token is not None
            return self._token

    def renew(self, refused: str) -> bool:
        """Obtain a new token after Shopify refused `refused`; False when the token is
        static (nothing to renew). Another thread that renewed meanwhile counts."""
        with self._lock:
            if not self.renewable:
                return False
            if self._token != refused:
                return True
            self._grant()
            return True

    def _grant(self) -> None:
        domain = self.connection.domain
        url = f"{admin_base(self.settings, domain)}/admin/oauth/access_token"
        started = self._clock()
        try:
            response = httpx.post(
                url,
                data={
                    "grant_type": "client_credentials",
                    "client_id": self.connection.client_id,
                    "client_secret": self.connection.client_secret,
                },
                headers={"Accept": "application/json"},
                timeout=self.settings.request_timeout_seconds,
            )
        except httpx.TransportError as exc:
            raise ShopifyError(f"{domain}: access token request failed: {exc}") from exc
        if response.status_code in (400, 401, 403):
            # Shopify answers 400 for an unknown client or a shop the app is not installed
            # on: either way the credentials do not open this shop.
            raise ShopifyAuthError(
                f"{domain}: Shopify refused the client credentials (HTTP "
                f"{response.status_code}): check the client id and secret, that the app is "
                "installed on this store, and that the store belongs to the app's organization"
            )
        if response.status_code >= 400:
            raise ShopifyError(
                f"{domain}: access token request failed (HTTP {response.status_code})"
            )
        try:
            body = response.json()
            token = str(body["access_token"])
            expires_in = float(body.get("expires_in") or 0)
        except (ValueError, KeyError, TypeError) as exc:
            raise ShopifyError(f"{domain}: access token response not understood") from exc
        self._token = token
        # No expires_in would mean a token that does not expire; renew daily all the same.
        self._expires_at = started + (expires_in or 86400)
        self.scope = body.get("scope")
        self.grants += 1
        log.info("%s: obtained an access token (expires in %.0fs)", domain, expires_in)


_SHARED: dict[tuple[str, str, str], AccessTokens] = {}
_SHARED_LOCK = threading.Lock()


def shared_tokens(
    connection: ShopConnection,
    settings: ShopifySettings,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> AccessTokens:
    """The process's token holder for `connection`'s app and shop (a new one for a static
    token, which needs no sharing). Keyed by a digest of the secret, so a changed secret
    gets a holder of its own."""
    if not connection.uses_client_credentials:
        return AccessTokens(connection, settings, clock=clock)
    digest = hashlib.sha256(str(connection.client_secret).encode()).hexdigest()
    key = (admin_base(settings, connection.domain), str(connection.client_id), digest)
    with _SHARED_LOCK:
        holder = _SHARED.get(key)
        if holder is None or holder.settings != settings:
            holder = AccessTokens(connection, settings, clock=clock)
            _SHARED[key] = holder
        return holder
