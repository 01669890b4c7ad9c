"""Shopify settings: the operator's knobs (environment) and one store's connection (sealed).

Two kinds of settings, kept apart on purpose:

- `ShopifySettings`: how Quarry talks to Shopify at all (API version default, base address
  override for tests, share of the rate-limit bucket, lookback, bulk wait cap). Read from
  QUARRY_SHOPIFY_* when a connector or command is built, never at import.
- `ShopConnection`: what identifies one store (myshopify domain, API version, and either the
  client id and secret of a Dev Dashboard app, which obtain expiring access tokens through
  the client-credentials grant, or the static `shpat_` token of an older custom app).
  Stored encrypted in Store.connection_secret with quarry.crypto.SecretBox.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from quarry.crypto import SecretBox
from quarry.errors import ConfigurationError, InvalidRequest
from quarry.settings import read_environment

# The newest stable Admin API version (2026-10, stable since 1 October 2026, supported until
# October 2027: shopify.dev/changelog/release-notes/2026-10). Shopify supports each version
# for about a year, so the default is a setting (QUARRY_SHOPIFY_API_VERSION) and a
# per-store override.
DEFAULT_API_VERSION = "2026-10"
# From this version a shop runs up to five bulk query operations at once and answers
# `bulkOperation(id:)`; older versions run one at a time (platforms.shopify.bulk).
CONCURRENT_BULK_VERSION = "2026-01"
SHOPIFY_MAX_CONCURRENT_BULK = 5

_DOMAIN = re.compile(r"^[a-z0-9][a-z0-9-]{0,99}\.myshopify\.com$")
_VERSION = re.compile(r"^(\d{4}-(01|04|07|10)|unstable)$")


class ShopifySettings(BaseSettings):
    """Operator settings, from QUARRY_SHOPIFY_* (see docs/shopify.md)."""

    model_config = SettingsConfigDict(env_prefix="QUARRY_SHOPIFY_", extra="ignore")

    api_version: str = DEFAULT_API_VERSION
    # e.g. http://127.0.0.1:8765 for a local fake; "{domain}" is replaced by the store's
    # domain. None means https://{domain}.
    base_url: str | None = None
    # Never spend more than this share of the shop's cost bucket, so other syncs of the same
    # store (and the merchant's other tools on this app) keep headroom.
    bucket_share: float = Field(default=0.5, gt=0, le=1)
    # Incremental syncs re-read records updated this long before the last sync started:
    # Shopify's search index lags behind writes by seconds to minutes.
    lookback_seconds: int = Field(default=900, ge=0)
    # A bulk operation running longer than this is cancelled and its window split in two.
    bulk_wait_cap_seconds: float = Field(default=3600, gt=0)
    bulk_poll_seconds: float = Field(default=5.0, gt=0)
    # A window is not split below this span; a failure at this size is reported.
    min_window_seconds: int = Field(default=3600, ge=1)
    # Failed attempts at one window (errors without progress) before it is split.
    bulk_attempts: int = Field(default=3, ge=1)
    # Parent records per ChangePage (one commit of the sync).
    page_rows: int = Field(default=2000, ge=1)
    request_timeout_seconds: float = Field(default=60, gt=0)
    max_attempts: int = Field(default=10, ge=1)
    backoff_seconds: float = Field(default=1.0, ge=0)
    backoff_max_seconds: float = Field(default=60, ge=0)
    # Bulk query operations a backfill runs at once (API 2026-01+; older versions run one).
    bulk_concurrency: int = Field(default=SHOPIFY_MAX_CONCURRENT_BULK, ge=1, le=5)
    # A client-credentials token is renewed this long before Shopify says it expires, so a
    # query never goes out with a token that dies in flight.
    token_refresh_margin_seconds: float = Field(default=300, ge=0)
    # Webhooks of one store within this many seconds start one incremental sync.
    webhook_debounce_seconds: float = Field(default=60, ge=0)
    # The public address Shopify delivers webhooks to (https://quarry.example.com); unset
    # means `quarry stores add` subscribes to none (docs/shopify.md, "Webhooks").
    webhook_url: str | None = None


def load_shopify_settings(**overrides: Any) -> ShopifySettings:
    """Read QUARRY_SHOPIFY_* now; a value that does not parse is one ConfigurationError."""
    return read_environment(ShopifySettings, **overrides)


def normalize_domain(value: str, field: str = "domain") -> str:
    """`NAME.myshopify.com`, lower-cased, or InvalidRequest naming `field`.

    A custom domain (shop.example.com) is refused: the Admin API is only reliably reachable
    at the permanent myshopify domain.
    """
    domain = value.strip().lower().removeprefix("https://").removeprefix("http://").rstrip("/")
    if not _DOMAIN.match(domain):
        raise InvalidRequest(
            f"{field}: {value!r} is not a myshopify domain such as my-store.myshopify.com",
            errors=[{"field": field, "message": "not a NAME.myshopify.com domain"}],
        )
    return domain


def supports_concurrent_bulk(api_version: str) -> bool:
    """Whether `api_version` runs several bulk queries at once and has bulkOperation(id:)."""
    return api_version == "unstable" or api_version >= CONCURRENT_BULK_VERSION


def check_api_version(value: str, field: str = "api_version") -> str:
    if not _VERSION.match(value):
        raise InvalidRequest(
            f"{field}: {value!r} is not a Shopify API version such as {DEFAULT_API_VERSION}",
            errors=[{"field": field, "message": "not a YYYY-MM API version"}],
        )
    return value


@dataclass(frozen=True)
class ShopConnection:
    """How to reach one store: a static `token`, or `client_id` and `client_secret` that
    obtain expiring tokens (client-credentials grant). `repr` hides every secret so none
    lands in a log."""

    domain: str
    token: str | None
    api_version: str
    client_id: str | None = None
    client_secret: str | None = None

    def __post_init__(self) -> None:
        if not self.token and not (self.client_id and self.client_secret):
            raise ConfigurationError(
                f"{self.domain}: a Shopify connection needs an access token, or a client id "
                "and client secret"
            )

    @property
    def uses_client_credentials(self) -> bool:
        """A static token wins: an older custom app may also keep its API secret here, only
        to verify the webhooks it signs."""
        return bool(self.client_id and self.client_secret and not self.token)

    def __repr__(self) -> str:
        kind = "client_credentials" if self.uses_client_credentials else "static_token"
        return (
            f"ShopConnection(domain={self.domain!r}, api_version={self.api_version!r}, "
            f"auth={kind!r})"
        )

    def seal(self, box: SecretBox) -> str:
        """The encrypted document for Store.connection_secret."""
        doc = {"domain": self.domain, "api_version": self.api_version}
        if self.token:
            doc["token"] = self.token
        if self.client_id:
            doc["client_id"] = self.client_id
        if self.client_secret:
            doc["client_secret"] = self.client_secret
        return box.seal(doc)

    @classmethod
    def open(cls, box: SecretBox, secret: str | None, default_version: str) -> ShopConnection:
        if not secret:
            raise ConfigurationError("this Shopify store has no connection settings")
        doc = box.open(secret)
        try:
            return cls(
                domain=doc["domain"],
                token=doc.get("token"),
                api_version=doc.get("api_version") or default_version,
                client_id=doc.get("client_id"),
                client_secret=doc.get("client_secret"),
            )
        except KeyError as exc:
            raise ConfigurationError(f"Shopify connection settings lack {exc}") from exc
