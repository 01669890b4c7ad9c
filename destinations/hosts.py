"""The private-host guard: a destination may not reach the service's own network.

A configuration naming a host that resolves to a private, loopback, link-local, shared or
otherwise non-global address could read or write internal services (a metadata endpoint, a
database port), so such hosts are refused when a configuration is applied and again when a
delivery connects: DNS may answer differently later. At connect time we connect to the very
address we checked, so a name cannot be re-resolved to somewhere else in between.
QUARRY_ALLOW_PRIVATE_HOSTS turns the guard off for tests and local development.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import urlsplit

_HOST_NAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9_]([A-Za-z0-9_-]{0,62})(\.[A-Za-z0-9_-]{1,63})*\.?$"
)


class HostRefused(Exception):
    """The host resolves to an address a destination may not reach, or does not resolve."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def host_syntax_error(host: str) -> str | None:
    """Why `host` is not a host name or IP address, or None when it is one."""
    candidate = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        ipaddress.ip_address(candidate)
        return None
    except ValueError:
        pass
    if not _HOST_NAME.match(host):
        return "must be a host name or IP address (no scheme, port or path)"
    return None


def _is_forbidden(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    # not is_global covers private, loopback, link-local, shared (100.64/10), reserved and
    # documentation ranges; multicast is global for some ranges but never a file server.
    return not ip.is_global or ip.is_multicast


def _resolve(host: str, port: int) -> list[tuple[int, str]]:
    candidate = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        infos = socket.getaddrinfo(candidate, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise HostRefused(f"host {host} does not resolve ({exc.strerror})") from None
    return [(family, str(sockaddr[0])) for family, _, _, _, sockaddr in infos]


def check_host(host: str, *, allow_private: bool, port: int = 0) -> None:
    """Apply-time check: raise HostRefused when `host` resolves to a forbidden address.
    A name that does not resolve now is accepted: it is checked again when delivering."""
    if allow_private:
        return
    try:
        addresses = _resolve(host, port)
    except HostRefused:
        return
    for _, address in addresses:
        if _is_forbidden(address):
            raise HostRefused(
                f"{host} resolves to {address}, a private, loopback or link-local address; "
                "destinations may only reach public hosts"
            )


def checked_addresses(host: str, port: int, *, allow_private: bool) -> list[tuple[int, str]]:
    """Connect-time check: the addresses to connect to, all of them allowed."""
    addresses = _resolve(host, port)
    if not allow_private:
        for _, address in addresses:
            if _is_forbidden(address):
                raise HostRefused(
                    f"{host} resolves to {address}, a private, loopback or link-local "
                    "address; destinations may only reach public hosts"
                )
    return addresses


def connect(host: str, port: int, *, timeout: float | None, allow_private: bool) -> socket.socket:
    """A TCP connection to `host` made only to addresses that passed the guard."""
    last_error: OSError | None = None
    for family, address in checked_addresses(host, port, allow_private=allow_private):
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect((address, port))
            return sock
        except OSError as exc:
            sock.close()
            last_error = exc
    if last_error is None:
        raise HostRefused(f"host {host} has no address")
    raise last_error


def check_url(url: str, *, allow_private: bool) -> None:
    """Connect-time guard for an HTTP(S) address whose connection a library makes itself."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    checked_addresses(parts.hostname or "", port, allow_private=allow_private)


def url_error(url: str, *, allow_private: bool) -> str | None:
    """Apply-time check of an API base address: why it is refused, or None.
    Plain http is accepted only when private hosts are (tests and local development), since
    it would send access tokens in the clear."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        return "must be an https:// address"
    if parts.query or parts.fragment or parts.username or parts.password:
        return "must be a base address without credentials, query or fragment"
    try:
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return "has an invalid port"
    try:
        check_host(parts.hostname, allow_private=allow_private)
    except HostRefused as exc:
        return exc.reason
    if parts.scheme == "http" and not allow_private:
        return "must be an https:// address"
    return None
