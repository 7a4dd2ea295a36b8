"""Selectors end a lane's chain (llama.cpp's `greedy` and `dist`): `Argmax`, or `Sampler`, a seeded draw by
inverse CDF. Both decision paths (decoding.engine.lane_state, decoding.engine.row_batch) choose through them.

A sampled lane owns one `numpy.random.Generator(PCG64(seed))`, so lanes never influence each other's draws
and the same seed gives the same draws in any process on any platform. A draw takes one uniform u in [0, 1)
and walks the processed distribution in descending-probability order (equal probabilities by ascending id):
the chosen token is the one whose cumulative interval [low, high) holds u, which tells the UI how close the
draw came to the neighbouring tokens. Only a partitioned prefix is sorted unless u falls beyond it.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from decoding.chain.processors import PREFIX_TIERS, SAMPLE_STRIDE, sample_thresholds
from decoding.records.stats import Softmax, not_in


def greedy(scores: np.ndarray) -> np.ndarray:
    """Argmax per row, the lowest id on ties (as torch.argmax): [rows, vocab] -> int64 [rows]."""
    return np.argmax(np.asarray(scores), axis=-1).astype(np.int64)


@dataclass(slots=True)  # not frozen: built for every draw (a frozen __init__ costs 4x)
class Draw:
    token_id: int
    u: float  # the uniform draw
    low: float  # cumulative probability (descending order) where the token's interval starts ...
    high: float  # ... and ends: low <= u < high


class Candidates:
    """The processed distribution a selector chooses from: the row (-inf = filtered) and its Softmax (None:
    every token filtered). What a draw walks (`walked`) and its best positions (`best`: the statistics' top-N)
    are found once for every lane choosing from the row; `holes` (its -inf positions) and `best`, when the
    caller has them already."""

    def __init__(self, processed: np.ndarray, softmax: Softmax | None, top_n: int,
                 holes: np.ndarray | None = None, best: np.ndarray | None = None) -> None:
        self.processed, self.softmax, self.top_n, self.holes = processed, softmax, top_n, holes
        if best is not None:
            self.best = best

    @cached_property
    def walked(self) -> WalkedTokens:
        return WalkedTokens(self.softmax, self.holes)

    @cached_property
    def best(self) -> np.ndarray:
        return self.softmax.best(min(self.top_n, self.softmax.kept))


class Argmax:
    """The selector of a greedy lane (llama.cpp's `greedy`): the most likely token, the lowest id on ties."""

    name = "greedy"

    def select(self, candidates: Candidates) -> tuple[int, Draw | None]:
        """(token, None): nothing is drawn."""
        softmax = candidates.softmax
        return (softmax.best_token() if softmax is not None else int(np.argmax(candidates.processed))), None

    def skip(self, count: int = 1) -> None:
        """Nothing to skip: an argmax draws nothing."""

    def accept(self, token: int, prob: float, forced: bool = False) -> None:
        pass

    def reset(self) -> None:
        pass

    def clone(self) -> Argmax:
        return self


ARGMAX = Argmax()


class Sampler:
    """The selector of a sampled lane (llama.cpp's `dist`): seeded categorical sampling by inverse CDF. Its
    generator also gives the lane's other random numbers (XTC's coin), in the order the lane asks for them."""

    name = "dist"

    def __init__(self, seed: int):
        self.seed = seed  # a LaneSpec's, checked there
        self._rng = np.random.Generator(np.random.PCG64(self.seed))

    def select(self, candidates: Candidates) -> tuple[int, Draw]:
        """(token, its draw): the walk starts among the statistics' top-N (decoding.chain.selectors.draw_among_best)."""
        if candidates.softmax is None:  # every token filtered: draw_with says so
            draw = self.draw(candidates.processed)
        else:
            draw = draw_among_best(self.next_u(), candidates.walked, candidates.best)
        return draw.token_id, draw

    def skip(self, count: int = 1) -> None:
        """Draw `count` uniforms and discard them (a replay keeps its later draws where the original's were)."""
        for _ in range(count):
            self._rng.random()

    def next_u(self) -> float:
        """The lane's next uniform in [0, 1)."""
        return float(self._rng.random())

    def draw(self, scores: np.ndarray, softmax: Softmax | None = None) -> Draw:
        """Draw one token from the softmax of one processed row (-inf = filtered); `softmax`, when given, is
        Softmax.of(scores) already computed (its exp is reused)."""
        return draw_with(self.next_u(), scores, softmax)

    def accept(self, token: int, prob: float, forced: bool = False) -> None:
        pass

    def reset(self) -> None:
        """Back to the seed's first draw."""
        self._rng = np.random.Generator(np.random.PCG64(self.seed))

    def clone(self) -> Sampler:
        """A sampler whose future draws are this one's (an independent generator in the same state)."""
        return copy.deepcopy(self)


Selector = Argmax | Sampler


def draw_with(u: float, scores: np.ndarray, softmax: Softmax | None = None) -> Draw:
    """The token that uniform `u` selects from softmax(`scores`) by inverse CDF in descending order."""
    sm = softmax if softmax is not None else Softmax.of(scores)
    if sm is None:
        raise ValueError("cannot sample: every token is filtered (all scores are -inf)")
    return _walk(u, WalkedTokens(sm))


class WalkedTokens:
    """The tokens a draw from `sm` walks: its finite scores and their weights, the probabilities being
    weights / sm.total. A mostly kept row with a few -inf (whose positions `holes` are given or found) is
    walked without them, in copies gathered only for a walk beyond the best tokens; a masked row is walked
    in place, its holes (sm.holes, which keep raw scores) skipped."""

    def __init__(self, sm: Softmax, holes: np.ndarray | None = None) -> None:
        self.sm = sm
        self.total = sm.total
        self.skip = NO_POSITIONS if sm.holes is None else sm.holes
        self.holes = None
        if sm.holes is None and sm.ids is None and sm.filtered:  # walk the finite tokens only
            self.holes = np.flatnonzero(~(sm.row > -np.inf)) if holes is None else holes

    @cached_property
    def values(self) -> np.ndarray:
        return self.sm.values if self.holes is None else _without(self.sm.row, self.holes)

    @cached_property
    def weights(self) -> np.ndarray:
        return self.sm.weights if self.holes is None else _without(self.sm.weights, self.holes)

    def token_at(self, position: int) -> int:
        if self.sm.ids is not None:
            return int(self.sm.ids[position])
        if self.holes is None:
            return position
        # hole i has holes[i] - i kept tokens before it: those with at most `position` of them come before
        return position + int(np.searchsorted(self.holes - np.arange(self.holes.size), position, side="right"))


def _without(array: np.ndarray, holes: np.ndarray) -> np.ndarray:
    """`array` without the positions `holes` (sorted): array[row > -inf] without a full-size index array."""
    if holes.size > 64:
        keep = np.ones(array.size, dtype=bool)
        keep[holes] = False
        return array[keep]
    edges = [-1, *holes.tolist(), array.size]
    return np.concatenate([array[start + 1 : end] for start, end in itertools.pairwise(edges)])


def _walk(u: float, walked: WalkedTokens) -> Draw:
    values, weights, total, skip = walked.values, walked.weights, walked.total, walked.skip
    best, threshold = _split_best(values)  # every value left out is below threshold, or skipped
    if skip.size:
        best = not_in(best, skip)
    found, start = _draw_among(u, values, weights, total, best, 0.0, last=best.size == values.size - skip.size)
    if found is None:
        found = _draw_in_rest(u, values, weights, total, np.concatenate([best, skip]), threshold, start)
    if found is None:  # u above the rounded total and the rest has no probability: the last of the best
        found, _ = _draw_among(u, values, weights, total, best, 0.0, last=True)
    return Draw(token_id=walked.token_at(found[0]), u=u, low=found[1], high=found[2])


NO_POSITIONS = np.zeros(0, dtype=np.intp)
WIDER_PREFIX = 64  # best tokens a draw tries next when u falls beyond the top-N, before the whole walk


def draw_among_best(u: float, walked: WalkedTokens, best: np.ndarray) -> Draw:
    """draw_with(u, walked.sm.row, walked.sm), bit for bit, starting from the row's best positions (`best`:
    its Softmax.best's, the statistics' top-N). A draw walks the tokens in that order from cumulative 0, and a
    cumulative sum depends only on what comes before, so when u falls among the best tokens the walk ends
    there with draw_with's numbers and without a full-vocabulary pass; else among the WIDER_PREFIX best;
    else draw_with's whole walk."""
    found, cumulative = _among_prefix(u, walked, best)
    wider = min(WIDER_PREFIX, walked.sm.kept)
    # the tokens after the best ones are each at most as likely as the last of them
    reach = cumulative[-1] + (wider - best.size) * (cumulative[-1] - (cumulative[-2] if best.size > 1 else 0.0))
    if found is None and best.size < wider and u < reach:
        found, _ = _among_prefix(u, walked, walked.sm.best(wider))
    return found or _walk(u, walked)


def _among_prefix(u: float, walked: WalkedTokens, prefix: np.ndarray) -> tuple[Draw | None, np.ndarray]:
    """(the draw when u falls among the `prefix` positions (the best ones, best first), else None; their
    cumulative probabilities)."""
    sm = walked.sm
    cumulative = np.cumsum(sm.weights[prefix].astype(np.float64) / walked.total)
    end = int(np.searchsorted(cumulative, u, side="right"))
    if end >= prefix.size:
        return None, cumulative
    # cumulative[end - 1] <= u < cumulative[end]: the token has probability > 0
    token = int(prefix[end]) if sm.ids is None else int(sm.ids[prefix[end]])
    low = float(cumulative[end - 1]) if end else 0.0
    return Draw(token_id=token, u=u, low=low, high=float(cumulative[end])), cumulative


def _split_best(values: np.ndarray) -> tuple[np.ndarray, float]:
    """Positions of about the PREFIX_TIERS[0] largest values, and a threshold every other value is below."""
    if values.size <= PREFIX_TIERS[0]:
        return np.arange(values.size), -np.inf
    threshold = sample_thresholds(values, [PREFIX_TIERS[0] // SAMPLE_STRIDE])[0]
    return np.flatnonzero(values >= threshold), threshold


TAIL_BUCKETS = 256  # value buckets of the tokens below the best ones, for a draw that falls among them
Found = tuple[int, float, float]  # (position into the kept tokens, low, high)


def _draw_among(
    u: float, values: np.ndarray, weights: np.ndarray, total: float, positions: np.ndarray, start: float,
    last: bool,
) -> tuple[Found | None, float]:
    """Walk `positions` (all larger than any value left out) in descending order from cumulative `start`:
    (the token holding u, or None and the cumulative mass after them). `last`: nothing comes after."""
    order = positions[np.lexsort((positions, -values[positions]))]
    cumulative = start + np.cumsum(weights[order].astype(np.float64) / total)
    index = int(np.searchsorted(cumulative, u, side="right"))
    if index >= order.size and not last:
        return None, float(cumulative[-1])
    beyond_total = index >= order.size  # u at or above the rounded total (1 - 1e-16): the last likely token
    index = min(index, order.size - 1)
    while weights[order[index]] == 0.0 and index > 0:  # never pick a zero-probability token
        index -= 1
    high = 1.0 if beyond_total else float(cumulative[index])
    low = float(cumulative[index - 1]) if index else start
    return (int(order[index]), low, high), float(cumulative[-1])


def _draw_in_rest(
    u: float, values: np.ndarray, weights: np.ndarray, total: float, best: np.ndarray, threshold: float, start: float
) -> Found | None:
    """u fell below the `best` tokens (left out here with the skipped ones; every other value is below
    `threshold`): bucket the others on a uniform grid of their values (a larger value never lands in a lower
    bucket), find the bucket holding u from the bucket masses, and sort only that bucket."""
    low = values.min()
    scale = np.float32((TAIL_BUCKETS - 1) / (threshold - float(low)))
    grid = np.subtract(values, low)
    grid *= scale
    bucket = grid.astype(np.intp)  # bincount's own index type: no conversion there (in-place steps: fewer passes)
    np.minimum(bucket, TAIL_BUCKETS - 1, out=bucket)
    bucket[best] = TAIL_BUCKETS  # outside the grid: their mass is already in `start`
    # float64 weights given: bincount's own conversion of float32 ones costs 5x the counting (same sums)
    masses = np.bincount(bucket, weights=weights.astype(np.float64), minlength=TAIL_BUCKETS + 1)[:TAIL_BUCKETS]
    masses /= total
    reached = start + np.cumsum(masses[::-1])  # descending buckets
    index = int(np.searchsorted(reached, u, side="right"))
    if index >= reached.size:  # u at or above the rounded total: the least likely token with probability > 0
        if not (masses > 0).any():
            return None
        index = int(np.flatnonzero(masses[::-1] > 0)[-1])
    chosen = TAIL_BUCKETS - 1 - index
    before = float(reached[index - 1]) if index else start
    found, _ = _draw_among(u, values, weights, total, np.flatnonzero(bucket == chosen), before, last=True)
    return found
