"""Slow clients against a real `quarry serve` (issue 17, item 4), through raw sockets: the
server closes a connection whose request headers are not complete in time, or whose body
stalls, and leaves a prompt client alone. The timeouts are lowered to a second here; they
are 10 s and 30 s by default."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from quarry.settings import Settings
from tests.api.world import World
from tests.factories import running_api

HEADER_TIMEOUT = 1.0
BODY_TIMEOUT = 1.0
# Past the deadline, with room for a loaded machine.
GRACE = 5.0

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """`quarry serve` on a free loopback port over the session's QUARRY_HOME, its
    timeouts lowered; yields the port and the server's log."""
    log_path = tmp_path_factory.mktemp("serve") / "serve.log"
    with running_api(
        world.settings.home,
        world.settings.secret_key or "",
        log_path,
        QUARRY_HEADER_TIMEOUT_SECONDS=str(HEADER_TIMEOUT),
        QUARRY_BODY_TIMEOUT_SECONDS=str(BODY_TIMEOUT),
    ) as port:
        yield port, log_path


def _connect(port: int) -> socket.socket:
    connection = socket.create_connection(("127.0.0.1", port), timeout=GRACE)
    return connection


def _closed_within(connection: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closed the connection (None: still open after `seconds`),
    reading and dropping whatever it sends before."""
    started = time.monotonic()
    connection.settimeout(0.1)
    while time.monotonic() - started < seconds:
        try:
            if connection.recv(65536) == b"":
                return time.monotonic() - started
        except TimeoutError:
            continue
        except ConnectionResetError:
            return time.monotonic() - started
    return None


def _trickle(connection: socket.socket, data: bytes, seconds: float) -> float | None:
    """Send `data` a byte every 0.2 s for up to `seconds`; the time at which the server
    closed the connection (None: it never did)."""
    started = time.monotonic()
    for byte in data:
        if time.monotonic() - started > seconds:
            return None
        try:
            connection.sendall(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            return time.monotonic() - started
        closed = _closed_within(connection, 0.2)
        if closed is not None:
            return time.monotonic() - started
    return None


def test_headers_trickled_past_the_deadline_close_the_connection(
    server: tuple[int, Path], world: World
) -> None:
    port, log_path = server
    # Every byte arrives well inside uvicorn's own keep-alive timeout: only a deadline on
    # the whole header closes this connection.
    request = b"GET /healthz HTTP/1.1\r\nHost: quarry.test\r\nX-Slow: " + b"a" * 200
    with _connect(port) as connection:
        closed = _trickle(connection, request, HEADER_TIMEOUT + GRACE)
    assert closed is not None, "the server kept a trickling client past the header deadline"
    assert HEADER_TIMEOUT * 0.8 <= closed <= HEADER_TIMEOUT + GRACE, closed
    assert "request headers not complete within 1 s" in log_path.read_text()


def test_a_stalled_body_closes_the_connection(server: tuple[int, Path], world: World) -> None:
    port, log_path = server
    head = (
        b"POST /v1/query HTTP/1.1\r\nHost: quarry.test\r\n"
        b"Authorization: Bearer " + world.keys["a_all"].encode() + b"\r\n"
        b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    )
    with _connect(port) as connection:
        connection.sendall(head + b'{"query": ')
        closed = _closed_within(connection, BODY_TIMEOUT + GRACE)
    assert closed is not None, "the server kept a stalled body past the body timeout"
    assert closed >= BODY_TIMEOUT * 0.8, closed
    time.sleep(0.5)  # the app's read of the body ends after the close
    log = log_path.read_text()
    assert "request body stalled for 1 s" in log
    # The app sees the client go: no error of its own, no traceback.
    assert "Traceback" not in log, log


def test_a_webhook_without_credentials_is_answered_before_its_body(
    server: tuple[int, Path],
) -> None:
    """/webhooks/shopify checks its headers first, as /v1 checks the key: a client naming no
    connected store gets its 401 at once, not after trickling a body for the stall timeout."""
    port, _ = server
    head = (
        b"POST /webhooks/shopify HTTP/1.1\r\nHost: quarry.test\r\n"
        b"X-Shopify-Shop-Domain: nobody.myshopify.com\r\nX-Shopify-Hmac-SHA256: x\r\n"
        b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    )
    with _connect(port) as connection:
        connection.sendall(head + b'{"id": ')
        # Without the check first, the stall timeout closes it with no answer at all.
        answer = connection.recv(65536)
    assert answer.startswith(b"HTTP/1.1 401"), answer


def test_the_next_request_on_a_kept_connection_has_its_own_deadline(
    server: tuple[int, Path],
) -> None:
    port, _ = server
    request = b"GET /healthz HTTP/1.1\r\nHost: quarry.test\r\n\r\n"
    with _connect(port) as connection:
        connection.sendall(request)
        answer = connection.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200"), answer
        closed = _trickle(connection, request[:-2] + b"X-Slow: " + b"a" * 200, 3 * GRACE)
    assert closed is not None, "the server kept a trickling client past the header deadline"
    assert closed <= HEADER_TIMEOUT + GRACE, closed


def test_a_prompt_client_with_a_slow_answer_is_left_alone(
    server: tuple[int, Path], world: World
) -> None:
    """A body sent in pieces, each inside the stall timeout, is read to the end and
    answered, though the whole of it takes longer than either timeout."""
    port, _ = server
    body = b'{"query": "FROM sales SHOW total_sales"}'
    head = (
        b"POST /v1/query HTTP/1.1\r\nHost: quarry.test\r\n"
        b"Authorization: Bearer " + world.keys["a_all"].encode() + b"\r\n"
        b"Content-Type: application/json\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
    )
    with _connect(port) as connection:
        connection.sendall(head)
        for start in range(0, len(body), 10):
            time.sleep(BODY_TIMEOUT / 2)
            connection.sendall(body[start : start + 10])
        connection.settimeout(30)
        answer = connection.recv(65536)
    assert answer.startswith(b"HTTP/1.1 200"), answer


def test_the_defaults_are_ten_and_thirty_seconds() -> None:
    assert Settings.model_fields["header_timeout_seconds"].default == 10.0
    assert Settings.model_fields["body_timeout_seconds"].default == 30.0
