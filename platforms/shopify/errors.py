"""Errors the Shopify connector raises: QuarryErrors, so the CLI prints one line and the
pipelines record a readable reason. Messages never contain the access token."""

from __future__ import annotations

from dataclasses import dataclass

from platforms.base import IncompleteSync
from quarry.errors import QuarryError


@dataclass
class ShopifyError(QuarryError):
    """Shopify answered with something we cannot use (GraphQL errors, a failed operation)."""

    status: int = 502
    title: str = "Shopify error"


@dataclass
class ShopifyAuthError(ShopifyError):
    """The token was refused (401) or lacks an access scope (403, ACCESS_DENIED)."""

    title: str = "Shopify access refused"


@dataclass
class ShopifyIncompleteError(IncompleteSync):
    """Shopify's own counts disagree with the records read, twice (docs/shopify.md,
    "Completeness")."""

    title: str = "Shopify sync incomplete"
