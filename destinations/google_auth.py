"""Service-account access tokens for Google APIs (OAuth 2.0 JWT bearer grant, RFC 7523).

We sign the assertion ourselves with `cryptography` (RS256) rather than add google-auth:
the flow is one signed JWT posted to the token URI. The token URI is a destination
setting, never taken from the key file, so a crafted key file cannot send the signed
assertion elsewhere (and tests can point it at a local server).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from destinations import hosts
from destinations.fields import FieldReader, is_env_reference

DEFAULT_TOKEN_URI = "https://oauth2.googleapis.com/token"
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
# Google accepts assertions valid for at most an hour.
ASSERTION_LIFETIME = 3600
# Refresh a little early so a token does not expire in the middle of a request.
REFRESH_MARGIN = 120


class GoogleAuthError(Exception):
    """The token endpoint refused or could not be reached; `transient` as for DeliveryError."""

    def __init__(self, reason: str, *, transient: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.transient = transient


@dataclass(frozen=True)
class ServiceAccount:
    client_email: str
    private_key: rsa.RSAPrivateKey
    private_key_id: str | None

    def __repr__(self) -> str:  # the key must never reach a log through repr()
        return f"ServiceAccount({self.client_email!r})"


def parse_service_account(value: Mapping[str, Any] | str) -> ServiceAccount:
    """A service account from its JSON key (as a mapping or JSON text). ValueError names the
    missing or bad field and never quotes the key."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError("is not a JSON service-account key") from None
    if not isinstance(value, Mapping):
        raise ValueError("is not a JSON service-account key")
    if value.get("type") != "service_account":
        raise ValueError('must be a key of type "service_account"')
    email = value.get("client_email")
    if not isinstance(email, str) or "@" not in email:
        raise ValueError("has no client_email")
    pem = value.get("private_key")
    if not isinstance(pem, str):
        raise ValueError("has no private_key")
    try:
        key = serialization.load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        raise ValueError("has a private_key that cannot be read") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ValueError("has a private_key that is not an RSA key")
    key_id = value.get("private_key_id")
    return ServiceAccount(email, key, key_id if isinstance(key_id, str) else None)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signed_assertion(
    account: ServiceAccount,
    *,
    scopes: list[str],
    token_uri: str,
    subject: str | None = None,
    now: float | None = None,
) -> str:
    """The RS256-signed JWT exchanged for an access token."""
    issued = int(time.time() if now is None else now)
    header: dict[str, str] = {"alg": "RS256", "typ": "JWT"}
    if account.private_key_id:
        header["kid"] = account.private_key_id
    claims: dict[str, Any] = {
        "iss": account.client_email,
        "scope": " ".join(scopes),
        "aud": token_uri,
        "iat": issued,
        "exp": issued + ASSERTION_LIFETIME,
    }
    if subject:
        claims["sub"] = subject  # domain-wide delegation: act as this user
    signing_input = (
        f"{_b64(json.dumps(header, separators=(',', ':')).encode())}."
        f"{_b64(json.dumps(claims, separators=(',', ':')).encode())}"
    )
    signature = account.private_key.sign(
        signing_input.encode(), padding.PKCS1v15(), hashes.SHA256()
    )
    return f"{signing_input}.{_b64(signature)}"


class TokenSource:
    """Access tokens for one service account and scope set, fetched when needed and
    refreshed before they expire. `protect` is told every secret made (the assertion and
    each token) so logs and reasons can be scrubbed of them."""

    def __init__(
        self,
        account: ServiceAccount,
        *,
        scopes: list[str],
        token_uri: str,
        client: httpx.Client,
        subject: str | None = None,
        protect: Callable[[str], None] = lambda secret: None,
    ) -> None:
        self._account = account
        self._scopes = scopes
        self._token_uri = token_uri
        self._client = client
        self._subject = subject
        self._protect = protect
        self._token: str | None = None
        self._expires_at = 0.0

    def token(self, *, refresh: bool = False) -> str:
        if refresh or self._token is None or time.time() >= self._expires_at - REFRESH_MARGIN:
            self._fetch()
        assert self._token is not None
        return self._token

    def _fetch(self) -> None:
        assertion = signed_assertion(
            self._account, scopes=self._scopes, token_uri=self._token_uri, subject=self._subject
        )
        self._protect(assertion)
        try:
            response = self._client.post(
                self._token_uri,
                data={"grant_type": JWT_BEARER_GRANT, "assertion": assertion},
                headers={"Accept": "application/json"},
            )
        except httpx.TransportError as exc:
            raise GoogleAuthError(
                f"cannot reach the token endpoint ({type(exc).__name__})", transient=True
            ) from None
        if response.status_code >= 500 or response.status_code == 429:
            raise GoogleAuthError(
                f"the token endpoint answered {response.status_code}", transient=True
            )
        try:
            body = response.json()
        except ValueError:
            body = {}
        if response.status_code != 200 or not isinstance(body.get("access_token"), str):
            error = body.get("error", response.status_code)
            description = body.get("error_description", "")
            raise GoogleAuthError(
                f"the service account was refused by the token endpoint ({error}"
                + (f": {description}" if description else "")
                + "); check the key and that it is not disabled or deleted"
            )
        self._token = body["access_token"]
        self._protect(self._token)
        self._expires_at = time.time() + float(body.get("expires_in", 3600))


@dataclass(frozen=True)
class GoogleApiError:
    """The parts of a Google API error body a reason needs."""

    status: int
    reason: str
    message: str

    @property
    def transient(self) -> bool:
        return (
            self.status >= 500
            or self.status == 429
            or self.reason in ("rateLimitExceeded", "userRateLimitExceeded", "backendError")
        )


def api_error(response: httpx.Response) -> GoogleApiError:
    """Google's `{"error": {"code", "message", "errors": [{"reason"}], "status"}}`."""
    try:
        error = response.json().get("error", {})
    except ValueError:
        error = {}
    if not isinstance(error, Mapping):
        error = {"message": str(error)}
    reasons = error.get("errors") or [{}]
    reason = reasons[0].get("reason") if isinstance(reasons[0], Mapping) else None
    message = " ".join(str(error.get("message") or response.reason_phrase or "").split())[:300]
    return GoogleApiError(
        status=response.status_code,
        reason=str(reason or error.get("status") or ""),
        message=message,
    )


class GoogleSession:
    """Authorised requests: adds the bearer token and, when a request is refused with 401
    (the token was revoked or expired early), fetches a new token and sends it once more."""

    def __init__(self, tokens: TokenSource, client: httpx.Client) -> None:
        self._tokens = tokens
        self.client = client

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        headers = dict(kwargs.pop("headers", None) or {})
        headers["Authorization"] = f"Bearer {self._tokens.token()}"
        response = self.client.request(method, url, headers=headers, **kwargs)
        if response.status_code == 401:
            headers["Authorization"] = f"Bearer {self._tokens.token(refresh=True)}"
            response = self.client.request(method, url, headers=headers, **kwargs)
        return response


def read_google_settings(
    fields: FieldReader, allow_private: bool, *, default_api_base: str
) -> dict[str, Any]:
    """The settings both Google kinds share, read through a FieldReader: API base address,
    token URI, delegated subject, timeout, and the `service_account` credential."""
    api_base = fields.text("api_base_url", default=default_api_base, max_length=2048)
    token_uri = fields.text("token_uri", default=DEFAULT_TOKEN_URI, max_length=2048)
    subject = fields.text("subject", max_length=254)
    timeout = fields.integer("timeout_seconds", default=60, minimum=1, maximum=600)
    for name, url in (("api_base_url", api_base), ("token_uri", token_uri)):
        fields.check(name, url, lambda value: hosts.url_error(value, allow_private=allow_private))
    if subject and "@" not in subject:
        fields.error("subject", "must be the email address of the user to act as")
    account = fields.raw_credential("service_account")
    if account is None:
        fields.error("service_account", "is required", section="credentials")
    elif not is_env_reference(account):
        try:
            parse_service_account(account)
        except ValueError as exc:
            fields.error("service_account", str(exc), section="credentials")
    return {
        "api_base_url": (api_base or default_api_base).rstrip("/"),
        "token_uri": token_uri,
        "subject": subject,
        "timeout_seconds": timeout,
    }


def service_account_secrets(credentials: Mapping[str, Any]) -> list[str]:
    """What to redact from a service-account key: the key and its identifiers, not the
    public boilerplate (type, token URIs) that would mask innocent text."""
    value = credentials.get("service_account")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return [value]
    if not isinstance(value, Mapping):
        return []
    return [
        str(value[name])
        for name in ("private_key", "private_key_id", "client_email", "client_id")
        if isinstance(value.get(name), str)
    ]
