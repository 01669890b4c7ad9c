"""Drawing from weighted vocabularies, a whole column at a time."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa


def weighted_index(
    rng: np.random.Generator, weights: Sequence[float] | np.ndarray, n: int
) -> np.ndarray:
    """`n` indices into `weights`, each drawn with probability proportional to its weight."""
    cdf = np.cumsum(np.asarray(weights, dtype=float))
    picks = np.searchsorted(cdf / cdf[-1], rng.random(n), side="right")
    return np.minimum(picks, len(cdf) - 1)


def weighted_choice(
    rng: np.random.Generator, vocabulary: Sequence[tuple[str, float]], n: int
) -> pa.Array:
    """`n` strings from (value, weight) pairs."""
    values = pa.array([value for value, _ in vocabulary], pa.string())
    return values.take(pa.array(weighted_index(rng, [w for _, w in vocabulary], n)))
