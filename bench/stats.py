"""Figures and their targets: each figure is ours next to its floor, measured in the same
run, with the target it is held to and whether it met it. Nothing here measures; nothing
here knows a result in advance."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


def percentile(samples: Sequence[float], fraction: float) -> float:
    """The `fraction` quantile of `samples` by linear interpolation (numpy's default)."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    position = (len(ordered) - 1) * fraction
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class Timings:
    """Repeated timings of one operation, in milliseconds."""

    samples: tuple[float, ...]

    @classmethod
    def of_seconds(cls, seconds: Sequence[float]) -> Timings:
        return cls(tuple(s * 1000.0 for s in seconds))

    @property
    def p50(self) -> float:
        return percentile(self.samples, 0.50)

    @property
    def p95(self) -> float:
        return percentile(self.samples, 0.95)

    def to_json(self) -> dict[str, Any]:
        return {
            "n": len(self.samples),
            "p50_ms": round(self.p50, 3),
            "p95_ms": round(self.p95, 3),
            "min_ms": round(min(self.samples), 3),
            "max_ms": round(max(self.samples), 3),
        }


@dataclass(frozen=True)
class Target:
    """A rule `ours` must satisfy given `floor`; `text` says it the way the issue does."""

    text: str
    holds: Callable[[float, float | None], bool]


def within(factor: float, plus: float, unit: str) -> Target:
    """ours <= factor x floor + plus."""
    plus_text = f" + {plus:g} {unit}" if plus else ""
    return Target(
        f"<= {factor:g}x floor{plus_text}", lambda ours, floor: ours <= factor * _f(floor) + plus
    )


def at_least_ratio(factor: float) -> Target:
    """ours >= factor x floor (throughputs: more is better)."""
    return Target(f">= {factor:g}x floor", lambda ours, floor: ours >= factor * _f(floor))


def at_most_value(limit: float, unit: str) -> Target:
    return Target(f"< {limit:g} {unit}", lambda ours, _floor: ours < limit)


def at_least_value(limit: float, unit: str) -> Target:
    return Target(f">= {limit:,g} {unit}", lambda ours, _floor: ours >= limit)


def _f(floor: float | None) -> float:
    if floor is None:
        raise ValueError("this target needs a floor")
    return floor


@dataclass
class Figure:
    """One measured figure. `target` None: reported for context, held to nothing."""

    name: str
    label: str
    unit: str
    ours: float
    floor: float | None = None
    target: Target | None = None
    note: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.floor is None or self.floor == 0:
            return None
        return self.ours / self.floor

    @property
    def met(self) -> bool | None:
        return None if self.target is None else bool(self.target.holds(self.ours, self.floor))

    def to_json(self) -> dict[str, Any]:
        ratio = self.ratio
        return {
            "name": self.name,
            "label": self.label,
            "unit": self.unit,
            "ours": _round(self.ours),
            "floor": None if self.floor is None else _round(self.floor),
            "ratio": None if ratio is None else round(ratio, 3),
            "target": None if self.target is None else self.target.text,
            "met": self.met,
            "note": self.note,
            "detail": self.detail,
        }


def _round(value: float) -> float:
    return round(value, 3) if abs(value) < 1000 else round(value, 1)


@dataclass
class Section:
    """A section's figures, or the reason it could not be measured. A section may also
    carry figures that are individually not available (`missing`)."""

    name: str
    figures: list[Figure] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    unavailable: str | None = None
    seconds: float = 0.0

    def add(self, figure: Figure) -> Figure:
        self.figures.append(figure)
        return figure

    def to_json(self) -> dict[str, Any]:
        if self.unavailable is not None:
            return {"available": False, "reason": f"not available: {self.unavailable}"}
        return {
            "available": True,
            "seconds": round(self.seconds, 1),
            "figures": [f.to_json() for f in self.figures],
            "not_available": {k: f"not available: {v}" for k, v in self.missing.items()},
            "notes": self.notes,
        }
