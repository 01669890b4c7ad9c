"""The demo account's small JSON state: seed, anchor, demo clock, and per store its template
position, order rate and next platform ids."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any

import numpy as np

from platforms.demo.timeline import to_datetime

STATE_FILE = "state.json"
ID_TYPES = (
    "Order", "LineItem", "Refund", "RefundLineItem", "Customer", "Product", "ProductVariant",
    "DraftOrder",
)  # fmt: skip


@dataclass
class StoreState:
    id: str
    index: int
    name: str
    currency: str
    timezone: str
    # Seeded orders per unit of day weight: advances keep the store as busy as it was.
    orders_per_weight: float
    next_ids: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ID_TYPES, 1))

    def take_ids(self, type_name: str, count: int) -> np.ndarray:
        """The next `count` local platform ids of `type_name`; never handed out twice."""
        first = self.next_ids[type_name]
        self.next_ids[type_name] = first + count
        return np.arange(first, first + count, dtype=np.int64)


@dataclass
class DemoState:
    account_id: str
    seed: int
    anchor: date
    # The demo clock, seconds since the epoch: every record is at or before it.
    clock: int
    advances: int
    stores: list[StoreState]

    def store(self, store_id: str) -> StoreState | None:
        return next((s for s in self.stores if s.id == store_id), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "account_id": self.account_id,
            "seed": self.seed,
            "anchor": self.anchor.isoformat(),
            "clock": to_datetime(self.clock).isoformat().replace("+00:00", "Z"),
            "clock_seconds": self.clock,
            "advances": self.advances,
            "stores": [asdict(s) for s in self.stores],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DemoState:
        return cls(
            account_id=data["account_id"],
            seed=int(data["seed"]),
            anchor=date.fromisoformat(data["anchor"]),
            clock=int(data["clock_seconds"]),
            advances=int(data["advances"]),
            stores=[StoreState(**s) for s in data["stores"]],
        )
