"""Per-step distribution statistics for a StepRecord: the raw softmax(logits) and the processed one.

Stable log-softmax (max-shifted, float64 normaliser), -inf safe (filtered tokens have probability 0 and add
nothing to the entropy), top-N by partition (no full sort of the vocabulary). Processed rows are usually
mostly -inf, so their statistics are computed over the kept tokens only.

Speed: exp over the vocabulary is most of the cost, so each row's exp is computed once (`Softmax`) and shared:
by every lane and beam reading the same batch row (`LogitsRowCache`), and by a lane's draw and its statistics. When
the source makes a RowSummary of the raw rows (ONNX Runtime does: its exp is several times faster), their
Softmax, entropy and best tokens are read from it instead. What a distribution's record holds apart from the
chosen token (`Spread`: entropy, margin, kept, tail mass, top-N) is computed once per distribution: a raw row's
once for every lane reading it (`LogitsRowCache.spreads`).

The small value classes here are built several times per row and step (a 32-member fan-out: ~250 a step), so
they are plain dataclasses, not frozen ones (whose __init__ costs 4x, a setattr call per field); nothing
changes them after they are built.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from decoding.chain.parameters import check_int
from decoding.chain.processors import top_candidates
from decoding.engine.protocol import RowSummary
from decoding.records.trace import TopList

MIN_TOP_N = 20
ENTROPY_FLOOR = np.float32(-1e30)  # stands in for -inf (0 * -inf is nan)


@dataclass
class Softmax:
    """exp(values - peak) of one row's finite scores: what the statistics and a draw both need."""

    row: np.ndarray  # the whole row (float32, -inf = filtered, or listed in `holes`)
    ids: np.ndarray | None  # positions of the finite scores, or None: `values` is the whole row
    values: np.ndarray  # row, or row[ids]
    peak: np.float32  # values.max()
    weights: np.ndarray  # exp(values - peak); 0 where filtered (by -inf; `holes` keep raw's)
    total: float  # sum of weights, float64
    kept: int  # finite scores
    filtered: bool  # some score is -inf
    clamp_for_entropy: bool  # some shifted value is below ENTROPY_FLOOR (or a -inf sits in `shifted`)
    weighted_shift: float | None = None  # sum(weights * shifted), when a RowSummary brought it
    top_ids: np.ndarray | None = None  # the best positions into `values`, best first, when a RowSummary did
    holes: np.ndarray | None = None  # a `masked` row's filtered positions: row, values and weights keep raw's there

    @classmethod
    def of(cls, scores: np.ndarray) -> Softmax | None:
        """None when every score is -inf."""
        row = np.asarray(scores, dtype=np.float32).ravel()
        low = row.min()
        if low > -np.inf:  # nothing filtered (raw logits): no mask needed
            ids, values, kept = None, row, row.size
        else:
            finite = row > -np.inf
            kept = int(np.count_nonzero(finite))
            if kept == 0:
                return None
            dense = kept > row.size // 2  # mostly kept: work on the whole row, -inf entries weigh 0
            ids = None if dense else np.flatnonzero(finite)
            values = row if dense else row[ids]
        peak = values.max()
        shifted = values - peak
        weights = np.exp(shifted)
        total = float(weights.sum(dtype=np.float64))
        clamp = ids is not None or low - peak < ENTROPY_FLOOR  # low: the row's minimum, -inf when filtered
        softmax = cls(row, ids, values, peak, weights, total, kept, bool(low == -np.inf), bool(clamp))
        softmax.__dict__["shifted"] = shifted  # computed already: seeds the cached property
        return softmax

    @classmethod
    def from_summary(cls, row: np.ndarray, summary: RowSummary, index: int) -> Softmax | None:
        """Row `index` of a batch its source summarised; computed here as `of` does if the row is not finite."""
        weighted_shift = float(summary.weighted_shift[index])
        if not math.isfinite(weighted_shift):  # a -inf (or nan) logit: the summary's sums are not usable
            return cls.of(row)
        return cls(
            row=row,
            ids=None,
            values=row,
            peak=summary.peak[index],
            weights=summary.weights[index],
            total=float(summary.total[index]),
            kept=row.size,
            filtered=False,
            clamp_for_entropy=False,
            weighted_shift=weighted_shift,
            top_ids=summary.top_ids[index],
        )

    @classmethod
    def of_sparse(cls, row: np.ndarray, ids: np.ndarray) -> Softmax | None:
        """Softmax.of(row), bit for bit, for a float32 row whose finite scores are at `ids`, half of it or
        fewer, with a finite peak; None otherwise (no finite score, NaN or +inf)."""
        values = row[ids]
        peak = values.max(initial=-np.inf)
        if not np.isfinite(peak) or ids.size > row.size // 2:
            return None
        shifted = values - peak
        weights = np.exp(shifted)
        softmax = cls(row, ids, values, peak, weights, float(weights.sum(dtype=np.float64)), ids.size, True, True)
        softmax.__dict__["shifted"] = shifted
        return softmax

    @classmethod
    def of_dense(cls, row: np.ndarray, holes: np.ndarray) -> Softmax | None:
        """Softmax.of(row), bit for bit, for a float32 row whose -inf positions are `holes`, when they are
        fewer than half of it and its peak is finite; None otherwise (NaN, +inf, mostly filtered)."""
        peak = row.max()
        if not np.isfinite(peak) or holes.size >= row.size - row.size // 2:
            return None
        low = -np.inf if holes.size else row.min()
        shifted = row - peak
        weights = np.exp(shifted)
        clamp = bool(holes.size) or low - peak < ENTROPY_FLOOR
        softmax = cls(row, None, row, peak, weights, float(weights.sum(dtype=np.float64)), row.size - holes.size,
                      bool(holes.size), bool(clamp))
        softmax.__dict__["shifted"] = shifted
        return softmax

    @classmethod
    def masked(cls, raw: Softmax, holes: np.ndarray) -> Softmax | None:
        """The Softmax of raw's (unfiltered) row with the positions `holes` (sorted, distinct, fewer than half
        of it) filtered, derived from raw's sums without building that row or a new exp over the vocabulary:
        its total and shift sum less the holes' terms, its best positions raw's without the holes. `row`,
        `values` and `weights` stay raw's arrays (not copied): `holes` says which of their positions are
        filtered, and every reader skips them. The same distribution as Softmax.of of the filtered row, to
        float rounding (the normaliser is exact in float64, not bit for bit). None when it cannot be derived
        as accurately: raw filtered itself, its peak among the holes (the weights would be relative to a
        filtered score), or the holes holding a quarter of its mass or more (their difference would lose
        digits)."""
        size = raw.row.size
        if raw.filtered or raw.ids is not None or not holes.size or holes.size >= size - size // 2:
            return None
        if holes.size == 1:  # the usual case (one eos id), in scalars: the same numbers, a third of the time
            removed, shift = _hole_terms(raw, int(holes[0]))
        else:
            hole_values = raw.values[holes]
            if not hole_values.max() < raw.peak:
                return None
            hole_weights = raw.weights[holes].astype(np.float64)
            removed, shift = float(hole_weights.sum()), float(np.dot(hole_weights, hole_values - raw.peak))
        if not removed < raw.total / 4:  # also refuses a banned peak (nan from _hole_terms)
            return None
        shift_sum = raw.shift_sum - shift
        top_ids = None if raw.top_ids is None else not_in(raw.top_ids, holes)
        return cls(raw.row, None, raw.values, raw.peak, raw.weights, raw.total - removed, size - holes.size, True,
                   True, weighted_shift=shift_sum, top_ids=top_ids, holes=holes)

    @cached_property
    def shifted(self) -> np.ndarray:
        """values - peak (float32)."""
        return self.values - self.peak

    @property
    def log_total(self) -> float:
        return float(np.log(self.total))

    @cached_property
    def shift_sum(self) -> float:
        """sum(weights * shifted), the entropy's second term: the RowSummary's when it brought it."""
        if self.weighted_shift is not None:
            return self.weighted_shift
        shifted = _at_least_floor(self.shifted) if self.clamp_for_entropy else self.shifted
        return float(np.dot(self.weights, shifted))  # the clamp keeps 0 * -inf out

    def entropy(self) -> float:
        """Nats; -inf scores add nothing."""
        return max(self.log_total - self.shift_sum / self.total, 0.0)

    def varentropy(self) -> float:
        """The variance of the surprisal -log p (nats squared) over the whole distribution: with s = value - peak,
        -log p = log total - s, so it is the variance of s under p, E[s^2] - E[s]^2 (two passes over the kept
        values: the weighted squares; E[s] is the entropy's shift sum). -inf scores add nothing."""
        shifted = _at_least_floor(self.shifted) if self.clamp_for_entropy else self.shifted
        weighted = self.weights * shifted  # 0 * floor: -0, never nan
        square_sum = float(np.dot(weighted, shifted))
        if self.holes is not None:  # a masked row keeps raw's arrays: its filtered positions' terms come off
            square_sum -= float(np.dot(weighted[self.holes].astype(np.float64), shifted[self.holes]))
        mean = self.shift_sum / self.total
        return max(square_sum / self.total - mean * mean, 0.0)

    def log_probs_at(self, positions: np.ndarray) -> np.ndarray:
        """float32 log-probabilities of `positions` into `values`: log_softmax's values there, bit for bit."""
        logprobs = (self.values[positions] - self.peak) - np.float32(self.log_total)
        if self.holes is not None:
            logprobs[np.isin(positions, self.holes)] = -np.inf
        return logprobs

    def best(self, count: int) -> np.ndarray:
        """Positions into `values` of the `count` largest, largest first, equal values by lower position
        (found once: a draw and the statistics both ask; a prefix of a longer list found before)."""
        for found in (self.top_ids, self.__dict__.get("_best")):
            if found is not None and found.size >= count:
                return found[:count]
        found = self.__dict__["_best"] = top_candidates(self.scores, count)
        return found

    def best_token(self) -> int:
        """The token id of the largest score, the lowest id on ties (argmax; the source's TopK when it made one)."""
        position = int(self.best(1)[0])
        return position if self.ids is None else int(self.ids[position])

    @cached_property
    def scores(self) -> np.ndarray:
        """`values` with the holes at -inf (`values` itself unless the row is masked)."""
        if self.holes is None:
            return self.values
        scores = self.values.copy()
        scores[self.holes] = -np.inf
        return scores

    def log_softmax(self) -> np.ndarray:
        """float32 log-probabilities over the whole row (-inf where filtered)."""
        logprobs = self.shifted - np.float32(self.log_total)  # log_probs_at computes the same, position by position
        if self.holes is not None:
            logprobs[self.holes] = -np.inf
        if self.ids is None:
            return logprobs
        out = np.full_like(self.row, -np.inf)
        out[self.ids] = logprobs
        return out


def _hole_terms(raw: Softmax, hole: int) -> tuple[float, float]:
    """(weight, weight * shifted value) of one filtered position, as Softmax.masked's float64 sums of many;
    (nan, nan) when it holds the peak."""
    value = raw.values[hole]
    if not value < raw.peak:
        return math.nan, math.nan
    weight = float(raw.weights[hole])
    return weight, weight * float(value - raw.peak)


def not_in(ids: np.ndarray, holes: np.ndarray) -> np.ndarray:
    """`ids` without those in `holes` (sorted), in their order (np.isin costs several times more here)."""
    if holes.size == 1:
        return ids[ids != holes[0]]
    at = np.minimum(np.searchsorted(holes, ids), holes.size - 1)
    return ids[holes[at] != ids]


def _at_least_floor(shifted: np.ndarray) -> np.ndarray:
    """np.maximum(shifted, ENTROPY_FLOOR), bit for bit, in a copy (numpy's maximum with a scalar is several
    times slower than a copy: only the few -inf, or the values below the floor, are set)."""
    below = np.flatnonzero(shifted < ENTROPY_FLOOR)
    clamped = shifted.copy()
    clamped[below] = ENTROPY_FLOOR
    return clamped


NO_HOLES = np.zeros(0, dtype=np.intp)


def processed_softmax(
    processed: np.ndarray, raw: Softmax | None, filters_only: bool
) -> tuple[np.ndarray | None, Softmax | None]:
    """(the -inf positions of a mostly kept row, else None; the row's Softmax, None when it is not usual: no
    finite score, NaN or +inf) of a lane's processed row; `raw`: the Softmax of the raw row it came from.
    A chain that only filters (`filters_only`) leaves the raw row with a few -inf: its Softmax is then derived
    from raw's (Softmax.masked, or raw itself when nothing was filtered); otherwise it is Softmax.of's, bit for
    bit. Both decision paths (lane by lane, batched rows) take their processed Softmax from here, so they agree
    bit for bit. The -inf are found by one comparison."""
    if not processed.min() == -np.inf:  # nothing filtered (or a NaN, which of_dense refuses)
        derived = derived_softmax(raw, NO_HOLES) if filters_only and raw is not None else None
        return NO_HOLES, derived or Softmax.of_dense(processed, NO_HOLES)
    filtered = processed == -np.inf
    if np.count_nonzero(filtered) < processed.size - processed.size // 2:  # mostly kept: Softmax.of's dense case
        holes = np.flatnonzero(filtered)
        derived = derived_softmax(raw, holes) if filters_only and raw is not None else None
        return holes, derived or Softmax.of_dense(processed, holes)
    return None, Softmax.of_sparse(processed, np.flatnonzero(~filtered))


def derived_softmax(raw: Softmax, holes: np.ndarray) -> Softmax | None:
    """The Softmax of raw's row with the positions `holes` filtered, derived from raw's: raw itself when there
    are none, else Softmax.masked; None where it must be computed anew (raw filtered or not finite, or
    Softmax.masked refusing). Batched rows that know their holes call it as processed_softmax does."""
    if raw.filtered or not np.isfinite(raw.peak):
        return None
    return Softmax.masked(raw, holes) if holes.size else raw


class LogitsRowCache:
    """One batch of logits rows; each row's Softmax is computed on first use and shared by every reader (lanes
    continuing identical rows, the beams of a lane that has just started). With a RowSummary from the
    source, a row's Softmax is read from it instead of computed."""

    def __init__(
        self, logits: np.ndarray, summary: RowSummary | None = None, unseen: np.ndarray | None = None
    ) -> None:
        """`unseen`: per row, the probability a partial source (a served model's top-N) did not return."""
        self.logits = logits
        self.summary = summary
        self.unseen = unseen
        self._softmax: dict[int, Softmax | None] = {}
        self._spreads: dict[int, Spread] = {}
        self._best: dict[int, np.ndarray] = {}
        self._peaks: np.ndarray | None = None

    def row(self, index: int) -> np.ndarray:
        return self.logits[index]

    def problem(self, index: int) -> str | None:
        """Why row `index` cannot be decided on (NaN, +inf, or no finite logit), or None. One max per row finds
        all three (NaN propagates through max); a RowSummary's finite weighted shift already says the row's
        logits are all finite (a NaN or infinite logit makes it NaN)."""
        if self.summary is not None and np.isfinite(self.summary.weighted_shift[index]):
            return None
        if self._peaks is None:
            with np.errstate(invalid="ignore"):
                self._peaks = self.logits.max(axis=1)
        if np.isfinite(self._peaks[index]):
            return None
        row = self.logits[index]
        if np.isnan(row).any():
            return f"{int(np.isnan(row).sum())} NaN logits"
        if np.isposinf(row).any():
            return f"{int(np.isposinf(row).sum())} +inf logits"
        return "no finite logit"

    def softmax(self, index: int) -> Softmax | None:
        if index not in self._softmax:
            row = self.logits[index]
            summary = self.summary
            self._softmax[index] = Softmax.of(row) if summary is None else Softmax.from_summary(row, summary, index)
        return self._softmax[index]

    def spreads(self, indices: Sequence[int], top_n: int, text: Callable[[int], str]) -> list[Spread]:
        """The raw Spread of each row (usable rows only), computed once per row for every lane reading it (the
        caller passes the same top_n and text every time). Each row's vocabulary-wide passes run back to back,
        while it is in cache; the top probabilities of all rows together."""
        missing = [index for index in dict.fromkeys(indices) if index not in self._spreads]
        if missing:
            softmaxes, bests, entropies = [], [], []
            for index in missing:
                softmaxes.append(self.softmax(index))
                bests.append(self.best(index, top_n))
                entropies.append(softmaxes[-1].entropy())
            for index, spread in zip(missing, spreads_of(softmaxes, bests, entropies, top_n, text), strict=True):
                self._spreads[index] = spread
        return [self._spreads[index] for index in indices]

    def best(self, index: int, top_n: int) -> np.ndarray:
        """softmax(index).best(min(top_n, kept)), computed once (the same top_n every time)."""
        if index not in self._best:
            softmax = self.softmax(index)
            self._best[index] = softmax.best(min(top_n, softmax.kept))
        return self._best[index]


@dataclass(slots=True)
class Distribution:
    """One distribution's summary, as StepRecord needs it."""

    prob: float  # of the chosen token (0.0 if filtered)
    logprob: float  # -inf if filtered
    entropy: float  # nats
    varentropy: float  # nats squared: the variance of the surprisal
    margin: float  # top-1 minus top-2 probability
    kept: int  # tokens with a finite score
    tail_mass: float  # probability outside the top-N
    top: TopList


@dataclass
class StepStats:
    """Every distribution field of a StepRecord, named as there."""

    prob: float
    prob_raw: float
    logprob: float
    logprob_raw: float
    entropy: float
    entropy_raw: float
    margin: float
    margin_raw: float
    kept: int
    tail_mass: float
    tail_mass_raw: float
    top: TopList
    top_raw: TopList
    varentropy: float
    varentropy_raw: float

    def record_fields(self) -> dict[str, Any]:
        """Keyword arguments for StepRecord (shallow: the top lists are shared)."""
        return dict(self.__dict__)  # the fields (dataclasses.fields costs more than the rest of a record)


EMPTY = Distribution(0.0, -np.inf, 0.0, 0.0, 0.0, 0, 0.0, TopList((), (), ()))


@dataclass(slots=True)
class Spread:
    """The part of a Distribution that does not depend on the chosen token: computed once per distribution
    and shared by every lane that chose from it."""

    entropy: float
    varentropy: float
    margin: float
    kept: int
    tail_mass: float
    top: TopList


def spread_of(
    sm: Softmax, top_n: int, text: Callable[[int], str], best: np.ndarray | None = None, entropy: float | None = None
) -> Spread:
    """`best` (positions into sm.values of its min(top_n, kept) largest) and `entropy`, when given, are what
    sm.best and sm.entropy() would return, computed already."""
    best = sm.best(min(top_n, sm.kept)) if best is None else best
    top_probs = np.exp((sm.values[best] - sm.peak).astype(np.float64) - sm.log_total)
    token_ids = (best if sm.ids is None else sm.ids[best]).tolist()
    probs = top_probs.tolist()
    top = TopList(token_ids, text, probs)
    return Spread(
        entropy=sm.entropy() if entropy is None else entropy,
        varentropy=sm.varentropy(),
        margin=probs[0] - (probs[1] if len(probs) > 1 else 0.0),
        kept=sm.kept,
        tail_mass=max(0.0, 1.0 - float(top_probs.sum())),
        top=top,
    )


def spreads_of(
    softmaxes: Sequence[Softmax],
    bests: Sequence[np.ndarray],
    entropies: Sequence[float],
    top_n: int,
    text: Callable[[int], str],
) -> list[Spread]:
    """[spread_of(sm, top_n, text, best, entropy) ...], bit for bit, with the top probabilities of the rows
    with the longest best lists (all but rows with few kept tokens) computed as one small matrix."""
    width = max((best.size for best in bests), default=0)
    out = [spread_of(sm, top_n, text, best, entropy) if best.size < width else None
           for sm, best, entropy in zip(softmaxes, bests, entropies, strict=True)]
    full = [i for i, best in enumerate(bests) if best.size == width]
    if not full:
        return out
    values = np.empty((len(full), width), dtype=np.float32)
    for j, i in enumerate(full):
        values[j] = softmaxes[i].values[bests[i]]
    peaks = np.array([softmaxes[i].peak for i in full], dtype=np.float32)[:, None]
    log_totals = np.array([softmaxes[i].log_total for i in full])[:, None]
    top_probs = np.exp((values - peaks).astype(np.float64) - log_totals)  # spread_of's, row by row
    tail_masses = (1.0 - top_probs.sum(axis=1)).tolist()
    for i, probs, tail_mass in zip(full, top_probs.tolist(), tail_masses, strict=True):
        sm, best = softmaxes[i], bests[i]
        token_ids = (best if sm.ids is None else sm.ids[best]).tolist()
        top = TopList(token_ids, text, probs)
        margin = probs[0] - (probs[1] if width > 1 else 0.0)
        out[i] = Spread(entropies[i], sm.varentropy(), margin, sm.kept, max(0.0, tail_mass), top)
    return out


def chosen_logprob(sm: Softmax, chosen: int) -> float:
    """The log-probability of token id `chosen` (-inf if filtered)."""
    dense = sm.ids is None
    position = chosen if dense else int(np.searchsorted(sm.ids, chosen))
    found = dense or (position < sm.kept and sm.ids[position] == chosen)
    if sm.holes is not None and chosen in sm.holes:
        found = False
    return float(sm.values[position] - sm.peak) - sm.log_total if found else -np.inf


def distribution(
    scores: np.ndarray,
    chosen: int,
    top_n: int = MIN_TOP_N,
    text: Callable[[int], str] = str,
    softmax: Softmax | None = None,
) -> Distribution:
    """Summarise softmax(`scores`) (one row, -inf = filtered) around the `chosen` token id; `softmax`, when
    given, is Softmax.of(scores) already computed."""
    sm = softmax if softmax is not None else Softmax.of(scores)
    if sm is None:
        return EMPTY
    return with_chosen(spread_of(sm, top_n, text), chosen_logprob(sm, chosen))


def with_chosen(spread: Spread, logprob: float) -> Distribution:
    return Distribution(float(np.exp(logprob)), logprob, spread.entropy, spread.varentropy, spread.margin, spread.kept,
                        spread.tail_mass, spread.top)


def step_stats(
    raw: np.ndarray,
    processed: np.ndarray,
    chosen: int,
    top_n: int = MIN_TOP_N,
    text: Callable[[int], str] = str,
    *,
    raw_softmax: Softmax | None = None,
    softmax: Softmax | None = None,
) -> StepStats:
    """Statistics of one lane's step. Pass the same array as `raw` and `processed` when a lane applies no
    processor: it is summarised once. `raw_softmax` / `softmax`: Softmax.of(raw) / Softmax.of(processed)
    when already computed."""
    check_int("top_n", top_n, MIN_TOP_N)
    raw_dist = distribution(raw, chosen, top_n, text, raw_softmax)
    both = softmax is not None and raw_softmax is not None
    if both and (softmax is raw_softmax or softmax.kept != raw_softmax.kept):  # known without a pass over the rows
        done = softmax is raw_softmax
    else:
        done = _same_array(processed, raw) or np.array_equal(processed, raw)
    proc = raw_dist if done else distribution(processed, chosen, top_n, text, softmax)
    return stats_of(raw_dist, proc)


def stats_of(raw_dist: Distribution, proc: Distribution) -> StepStats:
    return StepStats(
        prob=proc.prob,
        prob_raw=raw_dist.prob,
        logprob=proc.logprob,
        logprob_raw=raw_dist.logprob,
        entropy=proc.entropy,
        entropy_raw=raw_dist.entropy,
        margin=proc.margin,
        margin_raw=raw_dist.margin,
        kept=proc.kept,
        tail_mass=proc.tail_mass,
        tail_mass_raw=raw_dist.tail_mass,
        top=proc.top,
        top_raw=raw_dist.top,
        varentropy=proc.varentropy,
        varentropy_raw=raw_dist.varentropy,
    )


def _same_array(a: np.ndarray, b: np.ndarray) -> bool:
    """Both are views of the same memory with the same layout (e.g. `logits[0]` taken twice)."""
    if a is b:
        return True
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return False
    layout = (a.shape, a.strides, a.dtype) == (b.shape, b.strides, b.dtype)
    return layout and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
