"""Signed, expiring download links."""

from __future__ import annotations

import time

import pytest
from cryptography.fernet import Fernet

from destinations import signed_links
from destinations.signed_links import InvalidLink, LinkExpired
from quarry.settings import Settings

KEY = Fernet.generate_key().decode()
OLD_KEY = Fernet.generate_key().decode()


def test_round_trip() -> None:
    token = signed_links.sign("job-1", secret_keys=[KEY], expires_at=int(time.time()) + 60)
    assert signed_links.verify(token, secret_keys=[KEY]) == "job-1"


def test_expired() -> None:
    token = signed_links.sign("job-1", secret_keys=[KEY], expires_at=1000)
    with pytest.raises(LinkExpired, match="expired"):
        signed_links.verify(token, secret_keys=[KEY], now=1000)
    assert signed_links.verify(token, secret_keys=[KEY], now=999) == "job-1"


def test_forged_or_altered_tokens_are_refused() -> None:
    token = signed_links.sign("job-1", secret_keys=[KEY], expires_at=int(time.time()) + 60)
    version, body, mac = token.split(".")
    other = signed_links.sign("job-2", secret_keys=[KEY], expires_at=int(time.time()) + 9999)
    for bad in (
        f"{version}.{other.split('.')[1]}.{mac}",  # someone else's payload, this MAC
        f"{version}.{body}.{mac[:-2]}AA",
        f"v2.{body}.{mac}",
        "garbage",
        "",
    ):
        with pytest.raises(InvalidLink):
            signed_links.verify(bad, secret_keys=[KEY])
    with pytest.raises(InvalidLink):
        signed_links.verify(token, secret_keys=[Fernet.generate_key().decode()])


def test_links_survive_key_rotation() -> None:
    token = signed_links.sign("job-1", secret_keys=[OLD_KEY], expires_at=int(time.time()) + 60)
    assert signed_links.verify(token, secret_keys=[KEY, OLD_KEY]) == "job-1"


def test_download_url(app_settings: Settings) -> None:
    url, expires_at = signed_links.download_url(app_settings, "job-9", lifetime_seconds=3600, now=0)
    assert url.startswith("https://quarry.example.test/v1/downloads/v1.")
    assert expires_at == 3600
    token = url.rsplit("/", 1)[1]
    assert signed_links.verify_download_token(app_settings, token, now=10) == "job-9"
    # The link carries no key material.
    assert app_settings.fernet_keys[0] not in url
