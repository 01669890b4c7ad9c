"""Rate limit per key: a token bucket from QUARRY_RATE_LIMIT=N/S, in-process or in Redis
(shared by every worker), 429 with Retry-After and X-RateLimit-Limit, and
X-RateLimit-Remaining on every response to a key."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.ratelimit import MemoryLimiter, Quota, parse_quota
from quarry.errors import ConfigurationError
from registry.keys import create_key
from tests.api.conftest import Client, assert_problem
from tests.api.world import World
from tests.factories import free_port, running_server

REDIS_URL = "redis://127.0.0.1:6379/0"


def fresh_key(world: World, account: str = "a") -> str:
    """A key nobody used: its bucket (named by the key id) starts full, in Redis too, so
    runs never share state."""
    with world.registry.session() as session:
        issued = create_key(session, account_id=world.accounts[account], scopes=["read_data"])
    return issued.secret


@pytest.mark.parametrize(
    ("text", "expected"),
    [("120/60", Quota(120, 60)), ("5/1", Quota(5, 1)), (" 10 / 0.5 ", Quota(10, 0.5))],
)
def test_parse_quota(text: str, expected: Quota) -> None:
    assert parse_quota(text) == expected


@pytest.mark.parametrize("text", ["off", "OFF"])
def test_parse_quota_off(text: str) -> None:
    assert parse_quota(text) is None


@pytest.mark.parametrize("text", ["", "120", "0/60", "10/0", "ten/60", "-1/60", "10/-5"])
def test_parse_quota_refuses_nonsense(text: str) -> None:
    with pytest.raises(ConfigurationError, match="QUARRY_RATE_LIMIT"):
        parse_quota(text)


def test_memory_bucket_refills_evenly() -> None:
    limiter = MemoryLimiter(Quota(2, 0.2))
    assert [limiter.hit("k").allowed for _ in range(3)] == [True, True, False]
    time.sleep(0.12)  # one token per 0.1 s
    assert limiter.hit("k").allowed
    assert limiter.hit("other").remaining == 1


def _exhaust_and_check(client: Client, key: str, limit: int) -> None:
    remaining = []
    for _ in range(limit):
        response = client.get("/v1/account", key=key)
        assert response.status_code == 200
        assert response.headers["X-RateLimit-Limit"] == str(limit)
        remaining.append(int(response.headers["X-RateLimit-Remaining"]))
    assert remaining == list(range(limit - 1, -1, -1))
    refused = client.get("/v1/orders", key=key)
    body = assert_problem(refused, 429, "Too many requests")
    assert refused.headers["X-RateLimit-Limit"] == str(limit)
    assert refused.headers["X-RateLimit-Remaining"] == "0"
    retry_after = int(refused.headers["Retry-After"])
    assert 1 <= retry_after <= 60 // limit + 1
    assert "retry" in body["detail"]


def test_in_process_limit(make_client: Any, world: World) -> None:
    client: Client = make_client(rate_limit="3/60")
    _exhaust_and_check(client, fresh_key(world), 3)
    # Buckets are per key.
    other = fresh_key(world)
    assert client.get("/v1/account", key=other).status_code == 200


def test_every_call_costs_one_and_errors_carry_the_headers(make_client: Any, world: World) -> None:
    client: Client = make_client(rate_limit="4/60")
    key = fresh_key(world)
    for path, status in (
        ("/v1/orders?nope=1", 400),
        ("/v1/orders/ord_nope", 404),
        ("/v1/sales", 404),  # no route: no key is charged
        ("/v1/stores", 200),
    ):
        response = client.get(path, key=key)
        assert response.status_code == status
    headers = client.get("/v1/datasets", key=key).headers
    assert headers["X-RateLimit-Remaining"] == "0"
    assert_problem(client.get("/v1/account", key=key), 429, "Too many requests")


def test_requests_without_a_live_key_are_not_charged(make_client: Any, world: World) -> None:
    client: Client = make_client(rate_limit="1/60")
    for _ in range(3):
        response = client.get("/v1/account", key=world.keys["a_revoked"])
        assert response.status_code == 401
        assert "X-RateLimit-Remaining" not in response.headers
    assert client.get("/v1/account", key=fresh_key(world)).status_code == 200


def test_the_bucket_refills(make_client: Any, world: World) -> None:
    client: Client = make_client(rate_limit="2/2")  # a token a second
    key = fresh_key(world)
    assert [client.get("/v1/account", key=key).status_code for _ in range(3)] == [200, 200, 429]
    time.sleep(1.1)
    assert client.get("/v1/account", key=key).status_code == 200


def test_off_disables_the_limit(client: Client, world: World) -> None:
    key = fresh_key(world)
    for _ in range(150):
        response = client.get("/healthz") if _ % 50 else client.get("/v1/account", key=key)
        assert response.status_code == 200
    assert "X-RateLimit-Remaining" not in client.get("/v1/account", key=key).headers


def test_redis_buckets_are_shared_between_apps(make_client: Any, world: World) -> None:
    first: Client = make_client(rate_limit="4/60", redis_url=REDIS_URL)
    second: Client = make_client(rate_limit="4/60", redis_url=REDIS_URL)
    key = fresh_key(world)
    statuses = [c.get("/v1/account", key=key).status_code for c in (first, second) * 3]
    assert statuses == [200, 200, 200, 200, 429, 429]
    refused = second.get("/v1/account", key=key)
    assert int(refused.headers["Retry-After"]) >= 1
    assert refused.headers["X-RateLimit-Limit"] == "4"


def test_redis_unreachable_lets_requests_through(make_client: Any, world: World) -> None:
    client: Client = make_client(rate_limit="1/60", redis_url="redis://127.0.0.1:1/0")
    key = fresh_key(world)
    for _ in range(3):
        response = client.get("/v1/account", key=key)
        assert response.status_code == 200
        assert "X-RateLimit-Remaining" not in response.headers


# --- two uvicorn workers, one bucket ------------------------------------------------------

LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "default": {"format": "%(process)d %(name)s %(message)s"},
        "access": {
            "()": "uvicorn.logging.AccessFormatter",
            "fmt": (
                '%(process)d access %(client_addr)s "%(request_line)s" %(status_code)s '
                "%(request_id)s"
            ),
            "use_colors": False,
        },
    },
    "handlers": {
        "default": {"class": "logging.StreamHandler", "formatter": "default"},
        "access": {"class": "logging.StreamHandler", "formatter": "access"},
    },
    "loggers": {
        "uvicorn": {"handlers": ["default"], "level": "INFO", "propagate": False},
        "uvicorn.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
    },
}


@contextmanager
def _uvicorn_workers(world: World, tmp_path: Path, **env: str) -> Iterator[tuple[str, Path]]:
    """`uvicorn --workers 2 --factory api.main:create_app` on a free loopback port, over
    the session's QUARRY_HOME; yields its URL and log file, every line tagged by PID."""
    port = free_port()
    log_config = tmp_path / "log.json"
    log_config.write_text(json.dumps(LOG_CONFIG))
    log_path = tmp_path / "uvicorn.log"
    command = [
        sys.executable, "-m", "uvicorn", "--factory", "api.main:create_app",
        "--workers", "2", "--host", "127.0.0.1", "--port", str(port),
        "--log-config", str(log_config),
    ]  # fmt: skip
    with running_server(
        command,
        world.settings.home,
        world.settings.secret_key or "",
        log_path,
        lambda _: len(_pids(log_path, "Application startup complete")) >= 2,
        **env,
    ):
        yield f"http://127.0.0.1:{port}", log_path


def _pids(log_path: Path, marker: str) -> set[str]:
    return {line.split()[0] for line in log_path.read_text().splitlines() if marker in line}


@pytest.mark.slow
def test_two_workers_share_one_redis_bucket(world: World, tmp_path: Path) -> None:
    limit = 5
    env = {"QUARRY_RATE_LIMIT": f"{limit}/3600", "QUARRY_REDIS_URL": REDIS_URL}
    with _uvicorn_workers(world, tmp_path, **env) as (url, log_path):
        key = fresh_key(world)
        headers = {"Authorization": f"Bearer {key}"}
        statuses: list[int] = []
        # A new connection per request lets the kernel hand requests to either worker;
        # go on until both have answered some (with per-worker buckets that would allow
        # more than `limit` in total).
        while len(statuses) < 3 * limit or len(_pids(log_path, "/v1/account")) < 2:
            assert len(statuses) < 300, "one worker answered every request"
            response = httpx.get(f"{url}/v1/account", headers=headers)
            statuses.append(response.status_code)
            time.sleep(0.01)
        assert statuses.count(200) == limit, statuses
        assert statuses.count(429) == len(statuses) - limit
        # A key in the query string is refused, and kept out of the access log.
        assert httpx.get(f"{url}/v1/orders", params={"api_key": key}).status_code == 401
        # The request's own id is echoed and written on its access line.
        traced = httpx.get(f"{url}/v1/account", headers={"X-Request-Id": "trace-7f3a"})
        assert traced.headers["x-request-id"] == "trace-7f3a"
        time.sleep(0.3)
        log = log_path.read_text()
    assert "api_key=qk_***" in log
    assert any(
        "/v1/account" in line and " 401 " in line and line.endswith(" trace-7f3a")
        for line in log.splitlines()
    ), log[-2000:]
    assert key not in log and key[11:] not in log


def test_the_reset_header_says_when_the_budget_is_whole_again(
    make_client: Any, world: World
) -> None:
    client: Client = make_client(rate_limit="10/100")  # a token every 10 s
    key = fresh_key(world)
    before = time.time()
    first = client.get("/v1/account", key=key).headers
    # One token spent: whole again in 10 s.
    assert before + 9 <= int(first["X-RateLimit-Reset"]) <= time.time() + 11
    for _ in range(3):
        client.get("/v1/account", key=key)
    fourth = client.get("/v1/account", key=key).headers
    assert int(fourth["X-RateLimit-Reset"]) >= int(first["X-RateLimit-Reset"]) + 29
    assert int(fourth["X-RateLimit-Reset"]) <= time.time() + 51


def test_redis_buckets_send_the_reset_header_too(make_client: Any, world: World) -> None:
    client: Client = make_client(rate_limit="4/60", redis_url=REDIS_URL)
    key = fresh_key(world)
    before = time.time()
    headers = client.get("/v1/account", key=key).headers
    assert before + 14 <= int(headers["X-RateLimit-Reset"]) <= time.time() + 16
