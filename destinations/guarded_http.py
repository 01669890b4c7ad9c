"""HTTP connections that reach only the address the private-host guard checked.

The S3 (boto3, over urllib3) and Google (httpx, over httpcore) destinations let a library
open their connections, and each library resolves the host itself: checking the name
first (hosts.check_url) and letting the library connect afterwards leaves a gap in which
DNS can answer with a private address (DNS rebinding). Here the library's connect step is
replaced by hosts.connect, which resolves once, checks every address and connects to one
of those very addresses; TLS still verifies the certificate against the host name, which
the libraries keep using for SNI and the Host header.

A connection through a proxy (HTTPS_PROXY and the like) is left to the proxy: it resolves
the destination's name itself, so the guard belongs there (docs/destinations.md).
"""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import botocore.awsrequest
import httpcore
import httpx
from httpcore._backends.sync import SyncStream

from destinations import hosts


def _seconds(timeout: object) -> float | None:
    # urllib3 passes a sentinel for "the default": the socket module's own.
    return float(timeout) if isinstance(timeout, int | float) else socket.getdefaulttimeout()


def _guarded_urllib3_conn(connection: Any) -> socket.socket:
    sock = hosts.connect(
        connection._dns_host,
        connection.port,
        timeout=_seconds(connection.timeout),
        allow_private=False,
    )
    for option in connection.socket_options or ():
        sock.setsockopt(*option)
    return sock


class _GuardedAWSHTTPConnection(botocore.awsrequest.AWSHTTPConnection):
    def _new_conn(self) -> socket.socket:
        if self.proxy is not None:
            return super()._new_conn()
        return _guarded_urllib3_conn(self)


class _GuardedAWSHTTPSConnection(botocore.awsrequest.AWSHTTPSConnection):
    def _new_conn(self) -> socket.socket:
        if self.proxy is not None:
            return super()._new_conn()
        return _guarded_urllib3_conn(self)


class _GuardedHTTPPool(botocore.awsrequest.AWSHTTPConnectionPool):
    ConnectionCls = _GuardedAWSHTTPConnection


class _GuardedHTTPSPool(botocore.awsrequest.AWSHTTPSConnectionPool):
    ConnectionCls = _GuardedAWSHTTPSConnection


def guard_boto3_client(client: Any) -> None:
    """Make every connection of a boto3 client go through the guard. botocore keeps its
    urllib3 pool classes in one mapping of its HTTP session; its own connection classes are
    kept, only their connect step differs."""
    session = client._endpoint.http_session
    pools = {"http": _GuardedHTTPPool, "https": _GuardedHTTPSPool}
    session._pool_classes_by_scheme = pools
    session._manager.pool_classes_by_scheme = pools


class _GuardedBackend(httpcore.SyncBackend):
    """httpcore's synchronous network backend, connecting through hosts.connect."""

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            sock = hosts.connect(host, port, timeout=_seconds(timeout), allow_private=False)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        for option in socket_options or ():
            sock.setsockopt(*option)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return SyncStream(sock)


def guarded_transport() -> httpx.HTTPTransport:
    """An httpx transport whose connections go through the guard. httpx builds its
    httpcore pool without a way to choose the network backend, so it is set on the pool."""
    transport = httpx.HTTPTransport()
    pool = transport._pool
    if not isinstance(pool, httpcore.ConnectionPool) or not hasattr(pool, "_network_backend"):
        raise RuntimeError("httpx's transport has changed: the host guard cannot be installed")
    pool._network_backend = _GuardedBackend()
    return transport


def proxied(*urls: str) -> bool:
    """Whether the environment sends any of `urls` through a proxy (HTTPS_PROXY and the
    like, less NO_PROXY), as httpx would: then httpx must keep its own transports, which
    honour the proxy, and the proxy resolves the name."""
    proxies = urllib.request.getproxies_environment()
    for url in urls:
        parts = urlsplit(url)
        if (proxies.get(parts.scheme) or proxies.get("all")) and not (
            urllib.request.proxy_bypass(parts.hostname or "")
        ):
            return True
    return False
