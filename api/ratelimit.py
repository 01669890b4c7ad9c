"""Per-key rate limit: a token bucket of N requests refilled evenly over S seconds.

QUARRY_RATE_LIMIT=N/S sets it (default 120/60; `off` disables it). The bucket lives in
this process, or in Redis when QUARRY_REDIS_URL is set, updated by one Lua script so every
worker and host shares it atomically and by Redis's clock.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from dataclasses import dataclass
from typing import Protocol

import redis

from quarry.errors import ConfigurationError
from quarry.settings import Settings

logger = logging.getLogger("api.ratelimit")
REDIS_PREFIX = "quarry:ratelimit:"
_QUOTA = re.compile(r"^\s*(\d+)\s*/\s*(\d+(?:\.\d+)?)\s*$")


@dataclass(frozen=True)
class Quota:
    requests: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds


@dataclass(frozen=True)
class Decision:
    """The outcome of one request against a bucket; `retry_after` in whole seconds."""

    allowed: bool
    limit: int
    remaining: int
    retry_after: int = 0
    # Seconds until the bucket is full again.
    full_in: float = 0.0

    def reset_at(self) -> int:
        """X-RateLimit-Reset: UTC epoch seconds when the budget is whole again."""
        return math.ceil(time.time() + self.full_in)


class Limiter(Protocol):
    quota: Quota

    def hit(self, bucket: str) -> Decision | None:
        """Take one token from `bucket`; None when the limit cannot be known right now."""
        ...

    def close(self) -> None: ...


def parse_quota(text: str) -> Quota | None:
    """`N/S` as a Quota, None for `off`; ConfigurationError for anything else."""
    if text.strip().lower() == "off":
        return None
    match = _QUOTA.match(text)
    if not match or int(match[1]) < 1 or float(match[2]) <= 0:
        raise ConfigurationError(
            f"QUARRY_RATE_LIMIT: {text!r} is not N/S (N requests per S seconds) or off"
        )
    return Quota(int(match[1]), float(match[2]))


def _retry_after(missing: float, quota: Quota) -> int:
    return max(1, math.ceil(missing / quota.per_second))


class MemoryLimiter:
    """Buckets in this process: right for one worker, per-worker with several."""

    def __init__(self, quota: Quota) -> None:
        self.quota = quota
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def hit(self, bucket: str) -> Decision:
        capacity = self.quota.requests
        with self._lock:
            now = time.monotonic()
            tokens, then = self._buckets.get(bucket, (float(capacity), now))
            tokens = min(capacity, tokens + (now - then) * self.quota.per_second)
            allowed = tokens >= 1
            if allowed:
                tokens -= 1
            self._buckets[bucket] = (tokens, now)
        retry = 0 if allowed else _retry_after(1 - tokens, self.quota)
        full_in = (capacity - tokens) / self.quota.per_second
        return Decision(allowed, capacity, math.floor(tokens), retry, full_in)

    def close(self) -> None:
        self._buckets.clear()


# KEYS[1] bucket; ARGV capacity, period in microseconds. Returns {allowed, remaining,
# microseconds until one token, microseconds until full}. Redis's TIME is the one clock all
# workers agree on.
_SCRIPT = """
local capacity = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - at) * capacity / period)
local allowed = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  wait = math.ceil((1 - tokens) * period / capacity)
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens),
  'at', string.format('%.0f', now))
redis.call('PEXPIRE', KEYS[1], math.ceil(period / 1000) + 1000)
return {allowed, math.floor(tokens), wait, math.ceil((capacity - tokens) * period / capacity)}
"""


class RedisLimiter:
    """Buckets in Redis, shared by every worker. When Redis cannot be reached requests are
    let through (logged), since an outage of the limiter should not become one of the API."""

    def __init__(self, quota: Quota, url: str, prefix: str = REDIS_PREFIX) -> None:
        self.quota = quota
        self.prefix = prefix
        self._client = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
        self._script = self._client.register_script(_SCRIPT)
        self._warned_at = 0.0

    def hit(self, bucket: str) -> Decision | None:
        period = round(self.quota.seconds * 1_000_000)
        try:
            allowed, remaining, wait, full = self._script(
                keys=[self.prefix + bucket], args=[self.quota.requests, period]
            )
        except redis.RedisError as exc:
            if time.monotonic() - self._warned_at > 60:
                self._warned_at = time.monotonic()
                logger.warning("rate limit not applied, Redis unavailable: %s", exc)
            return None
        retry = 0 if allowed else max(1, math.ceil(int(wait) / 1_000_000))
        return Decision(
            bool(allowed), self.quota.requests, int(remaining), retry, int(full) / 1_000_000
        )

    def close(self) -> None:
        self._client.close()


def build_limiter(settings: Settings) -> Limiter | None:
    """The limiter the settings ask for, or None when the limit is off."""
    quota = parse_quota(settings.rate_limit)
    if quota is None:
        return None
    if settings.redis_url:
        return RedisLimiter(quota, settings.redis_url)
    return MemoryLimiter(quota)
