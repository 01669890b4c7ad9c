"""What the Google kinds (Drive, Sheets) share: an authorised session for one API scope,
the service-account secrets to redact, and the mapping of the API's refusals and the
token endpoint's failures to reasons."""

from __future__ import annotations

from typing import ClassVar

import httpx

from destinations import hosts
from destinations.base import BaseDestination, DeliveryError
from destinations.google_auth import (
    GoogleApiError,
    GoogleAuthError,
    GoogleSession,
    TokenSource,
    parse_service_account,
    service_account_secrets,
)
from destinations.guarded_http import guarded_transport, proxied


class GoogleDestination(BaseDestination):
    """A destination that writes through a Google API as a service account. Kinds set
    `scope` (the OAuth scope their requests need) and `service` (the API's name in
    reasons: "Drive"), and say in `_shared_item` what must be shared with the account."""

    scope: ClassVar[str]
    service: ClassVar[str]

    _tokens: TokenSource | None = None
    _client: httpx.Client | None = None

    def secrets(self) -> list[str]:
        return service_account_secrets(self._credentials)

    def _shared_item(self) -> str:
        """The item the service account must be able to edit, as reasons name it
        ("folder 1AbC...")."""
        raise NotImplementedError

    def _session(self) -> GoogleSession:
        settings = self.settings
        # Checked at every attempt: the addresses may resolve elsewhere than at apply time.
        hosts.check_url(settings["api_base_url"], allow_private=self.allow_private_hosts)
        hosts.check_url(settings["token_uri"], allow_private=self.allow_private_hosts)
        if self._client is None:
            self._client = httpx.Client(
                timeout=float(settings["timeout_seconds"]),
                follow_redirects=False,
                # Connect to the addresses checked, never to a second resolution of the
                # name; through a proxy, the proxy resolves it (docs/destinations.md).
                transport=None
                if self.allow_private_hosts
                or proxied(settings["api_base_url"], settings["token_uri"])
                else guarded_transport(),
            )
        if self._tokens is None:
            self._tokens = TokenSource(
                parse_service_account(self._credentials["service_account"]),
                scopes=[self.scope],
                token_uri=settings["token_uri"],
                client=self._client,
                subject=settings.get("subject"),
                protect=self.protect,
            )
        return GoogleSession(self._tokens, self._client)

    def _refused(self, error: GoogleApiError) -> DeliveryError:
        """An API refusal as a reason that says what to fix."""
        service, item = self.service, self._shared_item()
        if error.transient:
            return DeliveryError(
                f"{service} answered {error.status} ({error.message or error.reason})",
                transient=True,
            )
        if error.status == 401:
            return DeliveryError(f"{service} refused the access token; check the service account")
        if error.status == 403:
            return DeliveryError(
                f"permission denied: share {item} with the service account as an editor "
                f"({error.message or error.reason})"
            )
        if error.status == 404:
            return DeliveryError(f"{item} was not found, or is not shared with the service account")
        return DeliveryError(f"{service} refused the request ({error.status}: {error.message})")

    def _failure(self, exc: Exception) -> DeliveryError:
        if isinstance(exc, GoogleAuthError):
            return DeliveryError(exc.reason, transient=exc.transient)
        if isinstance(exc, httpx.TransportError):
            return DeliveryError(f"connection lost ({type(exc).__name__})", transient=True)
        return super()._failure(exc)
