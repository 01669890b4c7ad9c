"""Signed, expiring download links for files too large to attach to an email.

A link is `{public_url}/v1/downloads/{token}`; the token names an export job and an expiry
and carries an HMAC-SHA256 over both, so the API can serve the file without an API key and
nobody can forge or extend a link. The MAC key is derived from the app's secret key
(QUARRY_SECRET_KEY), not the key itself, so the Fernet keys that encrypt credentials are
never used for anything else. Every configured key verifies, so links survive a rotation.

Token: `v1.<base64url(json {"job": id, "exp": unix seconds})>.<base64url(mac)>`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass

from quarry.errors import Gone, NotFound
from quarry.settings import Settings

_VERSION = "v1"
_PURPOSE = b"quarry/download-link/v1"
MAX_LIFETIME_SECONDS = 30 * 24 * 3600


@dataclass
class InvalidLink(NotFound):
    """The link is malformed or forged (or names no job): a 404, so a caller learns nothing
    about which jobs exist."""

    title: str = "Download link not valid"


@dataclass
class LinkExpired(Gone):
    """A genuine link past its expiry: 410. Checked only after the signature, so it says
    nothing about links nobody issued."""

    title: str = "Download link expired"


def _mac_key(secret_key: str) -> bytes:
    return hmac.new(secret_key.encode(), _PURPOSE, hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sign(job_id: str, *, secret_keys: list[str], expires_at: int) -> str:
    """A token for `job_id`, valid until `expires_at` (unix seconds), signed with the newest
    key."""
    payload = json.dumps({"job": job_id, "exp": int(expires_at)}, separators=(",", ":"))
    body = _b64(payload.encode())
    mac = hmac.new(_mac_key(secret_keys[0]), f"{_VERSION}.{body}".encode(), hashlib.sha256)
    return f"{_VERSION}.{body}.{_b64(mac.digest())}"


def verify(token: str, *, secret_keys: list[str], now: float | None = None) -> str:
    """The job id a token names; InvalidLink when it is malformed or forged, LinkExpired
    when it is genuine but past its expiry."""
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != _VERSION:
        raise InvalidLink(detail="download link is not valid")
    signed = f"{parts[0]}.{parts[1]}".encode()
    try:
        given = _unb64(parts[2])
    except (ValueError, TypeError):
        raise InvalidLink(detail="download link is not valid") from None
    if not any(
        hmac.compare_digest(hmac.new(_mac_key(key), signed, hashlib.sha256).digest(), given)
        for key in secret_keys
    ):
        raise InvalidLink(detail="download link is not valid")
    try:
        payload = json.loads(_unb64(parts[1]))
        job_id, expires_at = str(payload["job"]), int(payload["exp"])
    except (ValueError, TypeError, KeyError):
        raise InvalidLink(detail="download link is not valid") from None
    if (time.time() if now is None else now) >= expires_at:
        raise LinkExpired(
            detail="this download link has expired; run the export again or download the "
            "file with an API key (GET /v1/export-jobs/{id}/download)"
        )
    return job_id


def download_url(
    app_settings: Settings, job_id: str, *, lifetime_seconds: int, now: float | None = None
) -> tuple[str, int]:
    """The public link to a job's file and its expiry (unix seconds)."""
    lifetime = max(60, min(lifetime_seconds, MAX_LIFETIME_SECONDS))
    expires_at = int((time.time() if now is None else now) + lifetime)
    token = sign(job_id, secret_keys=app_settings.fernet_keys, expires_at=expires_at)
    return f"{app_settings.public_url.rstrip('/')}/v1/downloads/{token}", expires_at


def verify_download_token(app_settings: Settings, token: str, *, now: float | None = None) -> str:
    """For the download route: the job id of a valid, unexpired token."""
    return verify(token, secret_keys=app_settings.fernet_keys, now=now)
