"""A client-side model of Shopify's cost bucket (a leaky bucket per app and store).

Every GraphQL response carries `extensions.cost.throttleStatus`: maximumAvailable,
currentlyAvailable and restoreRate (points per second). A query runs only when the bucket
holds its requested cost. We wait *before* sending until the bucket, as last reported and
refilled since, would still hold `(1 - share) * maximumAvailable` after paying the
requested cost: a sync never takes more than `share` of the shop's bucket.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

DEFAULT_COST = 50.0


@dataclass
class CostBucket:
    share: float
    clock: Callable[[], float] = time.monotonic
    maximum: float | None = None
    available: float | None = None
    restore_rate: float | None = None
    seen_at: float = 0.0
    # Last requested cost per operation name: the best estimate of the next one's.
    costs: dict[str, float] = field(default_factory=dict)

    def estimate(self, operation: str) -> float:
        return self.costs.get(operation, DEFAULT_COST)

    def wait_before(self, operation: str) -> float:
        """Seconds to wait before sending `operation`, 0 when it may go now."""
        if self.maximum is None or self.available is None or not self.restore_rate:
            return 0.0
        now_available = min(
            self.maximum, self.available + (self.clock() - self.seen_at) * self.restore_rate
        )
        reserve = (1 - self.share) * self.maximum
        needed = min(self.maximum, self.estimate(operation) + reserve)
        if now_available >= needed:
            return 0.0
        return (needed - now_available) / self.restore_rate

    def wait_after_throttled(self, requested: float) -> float:
        """Seconds until a THROTTLED query of cost `requested` would fit (at least a bit)."""
        if self.available is None or not self.restore_rate:
            return 1.0
        return max(0.5, (requested - self.available) / self.restore_rate)

    def observe(self, operation: str, cost: dict[str, Any] | None) -> None:
        """Record `extensions.cost` of a response."""
        if not cost:
            return
        requested = cost.get("requestedQueryCost")
        if requested is not None:
            self.costs[operation] = float(requested)
        status = cost.get("throttleStatus") or {}
        if "currentlyAvailable" in status:
            self.maximum = float(status["maximumAvailable"])
            self.available = float(status["currentlyAvailable"])
            self.restore_rate = float(status["restoreRate"])
            self.seen_at = self.clock()
