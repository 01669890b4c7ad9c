"""The private-host guard, at apply time and again at connect time."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from destinations import hosts
from destinations.base import DeliveryError
from destinations.kinds import destination_class
from destinations.retry import RetryPolicy
from quarry.errors import InvalidRequest
from quarry.settings import Settings
from tests.destinations.conftest import make_delivery
from tests.destinations.servers import Tripwire

FORBIDDEN = [
    "127.0.0.1",
    "127.8.9.10",
    "localhost",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "::1",
    "[::1]",
    "fe80::1",
    "fd00::1",
    "::ffff:10.0.0.1",
]
# Literal public addresses: checking them needs no DNS and sends no traffic.
ALLOWED = ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"]


@pytest.mark.parametrize("host", FORBIDDEN)
def test_private_addresses_are_refused(host: str) -> None:
    with pytest.raises(hosts.HostRefused) as failure:
        hosts.check_host(host, allow_private=False)
    assert "private, loopback or link-local" in failure.value.reason
    hosts.check_host(host, allow_private=True)


@pytest.mark.parametrize("host", ALLOWED)
def test_public_addresses_are_accepted(host: str) -> None:
    hosts.check_host(host, allow_private=False)


def test_host_syntax() -> None:
    assert hosts.host_syntax_error("sftp.example.com") is None
    assert hosts.host_syntax_error("[::1]") is None
    for bad in ("sftp://example.com", "example.com/path", "example.com:22", "a b", ""):
        assert hosts.host_syntax_error(bad)


HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"


@pytest.fixture
def tripwire() -> Iterator[Tripwire]:
    wire = Tripwire()
    yield wire
    wire.close()


def _configs(
    port: int, google_account: dict[str, str]
) -> dict[str, tuple[dict[str, Any], dict[str, Any], str]]:
    """kind -> (settings pointing at 127.0.0.1:port, credentials, the field that names it)."""
    url = f"http://127.0.0.1:{port}"
    return {
        "sftp": (
            {
                "host": "127.0.0.1",
                "port": port,
                "host_key": HOST_KEY,
            },
            {"username": "u", "password": "password-1"},
            "destination.settings.host",
        ),
        "ftps": (
            {"host": "127.0.0.1", "port": port},
            {"username": "u", "password": "password-1"},
            "destination.settings.host",
        ),
        "email": (
            {
                "host": "127.0.0.1",
                "port": port,
                "from_address": "a@example.com",
                "to": ["b@example.com"],
            },
            {},
            "destination.settings.host",
        ),
        "s3": (
            {"bucket": "quarry-exports", "endpoint_url": url},
            {"access_key_id": "AKIAEXAMPLE", "secret_access_key": "secret-1"},
            "destination.settings.endpoint_url",
        ),
        "google_drive": (
            {"folder_id": "folder-0001", "api_base_url": url, "token_uri": f"{url}/token"},
            {"service_account": google_account},
            "destination.settings.api_base_url",
        ),
        "google_sheets": (
            {
                "spreadsheet_id": "1AbCdEfGhIjKlMnOpQrStUv",
                "api_base_url": url,
                "token_uri": f"{url}/token",
            },
            {"service_account": google_account},
            "destination.settings.api_base_url",
        ),
    }


KINDS = ["sftp", "ftps", "email", "s3", "google_drive", "google_sheets"]


@pytest.mark.parametrize("kind", KINDS)
def test_refused_when_applied(
    kind: str, strict_settings: Settings, tripwire: Tripwire, google: Any
) -> None:
    settings, credentials, field = _configs(tripwire.port, google.service_account)[kind]
    with pytest.raises(InvalidRequest) as failure:
        destination_class(kind).validate(settings, credentials, strict_settings)
    fields = {e["field"]: e["message"] for e in failure.value.errors}
    assert "private, loopback or link-local" in fields[field]


@pytest.mark.parametrize("kind", KINDS)
def test_refused_again_when_connecting(
    kind: str,
    app_settings: Settings,
    strict_settings: Settings,
    tripwire: Tripwire,
    google: Any,
    tmp_path: Any,
) -> None:
    """A configuration applied while the host was allowed (or that resolved elsewhere then)
    is refused at delivery without a single connection."""
    settings, credentials, _ = _configs(tripwire.port, google.service_account)[kind]
    cls = destination_class(kind)
    normalised = cls.validate(settings, credentials, app_settings)
    destination = cls(normalised, credentials, strict_settings, retry=RetryPolicy(attempts=1))
    delivery = make_delivery(tmp_path, 100)
    delivery.path.write_text("id,total\n1,2\n")
    with pytest.raises(DeliveryError) as failure:
        destination.deliver(delivery)
    assert "127.0.0.1, a private, loopback or link-local address" in failure.value.reason
    assert not failure.value.transient
    assert tripwire.connections == 0


# A public address (example.com's) that a rebinding name answers first.
PUBLIC = "93.184.216.34"


@pytest.mark.parametrize(("kind", "checks"), [("s3", 1), ("google_drive", 2), ("google_sheets", 2)])
def test_a_name_rebound_after_the_check_is_not_connected_to(
    kind: str,
    checks: int,
    app_settings: Settings,
    strict_settings: Settings,
    tripwire: Tripwire,
    google: Any,
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DNS rebinding: the name answers a public address to the guard's checks and then
    127.0.0.1. The library used to resolve it again and connect there; the connection is
    now made to the address that was checked, so the second answer is refused too."""
    real = socket.getaddrinfo
    answers: list[str] = []

    def rebinding(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "rebind.test":
            return real(host, port, *args, **kwargs)
        answers.append(PUBLIC if len(answers) < checks else "127.0.0.1")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers[-1], int(port or 0)))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    settings, credentials, _ = _configs(tripwire.port, google.service_account)[kind]
    settings = {
        name: value.replace("127.0.0.1", "rebind.test") if isinstance(value, str) else value
        for name, value in settings.items()
    }
    cls = destination_class(kind)
    normalised = cls.validate(settings, credentials, app_settings)
    destination = cls(normalised, credentials, strict_settings, retry=RetryPolicy(attempts=1))
    delivery = make_delivery(tmp_path, 100)
    delivery.path.write_text("id,total\n1,2\n")
    with pytest.raises(DeliveryError) as failure:
        destination.deliver(delivery)
    assert answers[:checks] == [PUBLIC] * checks and "127.0.0.1" in answers
    assert "rebind.test resolves to 127.0.0.1, a private" in failure.value.reason
    assert not failure.value.transient
    assert tripwire.connections == 0


def test_through_a_proxy_the_google_client_keeps_the_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An explicit httpx transport would drop HTTPS_PROXY: the guard steps aside for a
    proxied address (the proxy resolves it) and for NO_PROXY hosts it applies."""
    from destinations.guarded_http import proxied

    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert not proxied("https://www.googleapis.com", "https://oauth2.googleapis.com/token")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    assert proxied("https://www.googleapis.com")
    monkeypatch.setenv("NO_PROXY", "googleapis.com")
    assert not proxied("https://www.googleapis.com", "https://oauth2.googleapis.com/token")
