"""Selectors end a lane's processor chain: greedy argmax, or a seeded draw by inverse CDF.

A sampled lane owns one `numpy.random.Generator(PCG64(seed))`, so lanes never influence each other's draws
and the same seed gives the same draws in any process on any platform. A draw takes one uniform u in [0, 1)
and walks the processed distribution in descending-probability order (equal probabilities by ascending id):
the chosen token is the one whose cumulative interval [low, high) holds u, which tells the UI how close the
draw came to the neighbouring tokens. Only a partitioned prefix is sorted unless u falls beyond it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from decoding.processors import PREFIX_TIERS, check_int, top_candidates


def greedy(scores: np.ndarray) -> np.ndarray:
    """Argmax per row, the lowest id on ties (as torch.argmax): [rows, vocab] -> int64 [rows]."""
    return np.argmax(np.asarray(scores), axis=-1).astype(np.int64)


@dataclass(frozen=True)
class Draw:
    token_id: int
    u: float  # the uniform draw
    low: float  # cumulative probability (descending order) where the token's interval starts ...
    high: float  # ... and ends: low <= u < high


class Sampler:
    """Seeded categorical sampling for one lane."""

    def __init__(self, seed: int):
        self.seed = check_int("seed", seed, 0)
        self._rng = np.random.Generator(np.random.PCG64(self.seed))

    @property
    def state(self) -> dict[str, Any]:
        """The generator's state (plain values), to copy a lane's draws into a branch."""
        return self._rng.bit_generator.state

    @state.setter
    def state(self, value: dict[str, Any]) -> None:
        self._rng.bit_generator.state = value

    def draw(self, scores: np.ndarray) -> Draw:
        """Draw one token from the softmax of one processed row (-inf = filtered)."""
        return draw_with(float(self._rng.random()), scores)


def draw_with(u: float, scores: np.ndarray) -> Draw:
    """The token that uniform `u` selects from softmax(`scores`) by inverse CDF in descending order."""
    row = np.asarray(scores, dtype=np.float32).ravel()
    kept = np.flatnonzero(row > -np.inf)
    if kept.size == 0:
        raise ValueError("cannot sample: every token is filtered (all scores are -inf)")
    values = row[kept].astype(np.float64)
    weights = np.exp(values - values.max())
    probs = weights / weights.sum()
    for size in (*PREFIX_TIERS, kept.size):
        found = _draw_in_prefix(u, values, probs, kept, min(size, kept.size))
        if found is not None:
            return found
    raise AssertionError("the full prefix always decides")


def _draw_in_prefix(
    u: float, values: np.ndarray, probs: np.ndarray, kept: np.ndarray, size: int
) -> Draw | None:
    """The draw if u provably falls inside the `size` most likely tokens, else None."""
    order = top_candidates(values, size)  # positions into `kept`, descending, ties by lower id
    cumulative = np.cumsum(probs[order])
    position = int(np.searchsorted(cumulative, u, side="right"))
    if size < kept.size and (position >= size or values[order[position]] == values[order[-1]]):
        return None  # u lies beyond the prefix, or its token's tie group may continue outside it
    beyond_total = position >= size  # u at or above the rounded total (1 - 1e-16): the last likely token
    position = min(position, size - 1)
    while probs[order[position]] == 0.0 and position > 0:  # never pick a zero-probability token
        position -= 1
    high = 1.0 if beyond_total else float(cumulative[position])
    low = float(cumulative[position - 1]) if position else 0.0
    return Draw(token_id=int(kept[order[position]]), u=u, low=low, high=high)
