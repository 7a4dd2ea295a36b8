"""Per-step distribution statistics for a StepRecord: the raw softmax(logits) and the processed one.

Stable log-softmax (max-shifted, float64 normaliser), -inf safe (filtered tokens have probability 0 and add
nothing to the entropy), top-N by partition (no full sort of the vocabulary). Processed rows are usually
mostly -inf, so their statistics are computed over the kept tokens only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from decoding.processors import top_candidates
from decoding.trace import TokenProb

MIN_TOP_N = 20
ENTROPY_FLOOR = np.float32(-1e30)  # stands in for -inf (0 * -inf is nan)


@dataclass(frozen=True)
class Distribution:
    """One distribution's summary, as StepRecord needs it."""

    prob: float  # of the chosen token (0.0 if filtered)
    logprob: float  # -inf if filtered
    entropy: float  # nats
    margin: float  # top-1 minus top-2 probability
    kept: int  # tokens with a finite score
    tail_mass: float  # probability outside the top-N
    top: list[TokenProb]


@dataclass(frozen=True)
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
    top: list[TokenProb]
    top_raw: list[TokenProb]

    def record_fields(self) -> dict[str, Any]:
        """Keyword arguments for StepRecord (shallow: the TokenProb lists are shared)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def distribution(
    scores: np.ndarray, chosen: int, top_n: int = MIN_TOP_N, text: Callable[[int], str] = str
) -> Distribution:
    """Summarise softmax(`scores`) (one row, -inf = filtered) around the `chosen` token id."""
    row = np.asarray(scores, dtype=np.float32).ravel()
    low = row.min()
    if low > -np.inf:  # nothing filtered (raw logits): no mask, and no -inf to guard in the entropy
        kept, dense, ids, values = row.size, True, None, row
    else:
        finite = row > -np.inf
        kept = int(np.count_nonzero(finite))
        if kept == 0:
            return Distribution(0.0, -np.inf, 0.0, 0.0, 0, 0.0, [])
        dense = kept > row.size // 2  # mostly kept: work on the whole row, -inf entries weigh 0
        ids = None if dense else np.flatnonzero(finite)
        values = row if dense else row[ids]
    peak = values.max()
    shifted = values - peak
    weights = np.exp(shifted)
    total = float(weights.sum(dtype=np.float64))
    log_total = float(np.log(total))
    if ids is not None or low - peak < ENTROPY_FLOOR:  # the floor keeps 0 * -inf out of the dot product
        shifted_for_entropy = np.maximum(shifted, ENTROPY_FLOOR)
    else:
        shifted_for_entropy = shifted  # every value is above the floor: np.maximum would copy it unchanged
    entropy = log_total - float(np.dot(weights, shifted_for_entropy)) / total
    best = top_candidates(values, min(top_n, kept))
    top_probs = np.exp(shifted[best].astype(np.float64) - log_total)
    chosen_pos = chosen if dense else int(np.searchsorted(ids, chosen))
    found = dense or (chosen_pos < kept and ids[chosen_pos] == chosen)
    logprob = float(shifted[chosen_pos]) - log_total if found else -np.inf
    token_ids = (best if dense else ids[best]).tolist()
    probs = top_probs.tolist()
    top = [TokenProb(id=t, text=text(t), prob=p, rank=r) for r, (t, p) in enumerate(zip(token_ids, probs, strict=True))]
    return Distribution(
        prob=float(np.exp(logprob)),
        logprob=logprob,
        entropy=max(entropy, 0.0),
        margin=probs[0] - (probs[1] if len(probs) > 1 else 0.0),
        kept=kept,
        tail_mass=max(0.0, 1.0 - float(top_probs.sum())),
        top=top,
    )


def step_stats(
    raw: np.ndarray,
    processed: np.ndarray,
    chosen: int,
    top_n: int = MIN_TOP_N,
    text: Callable[[int], str] = str,
) -> StepStats:
    """Statistics of one lane's step. Pass the same array as `raw` and `processed` when a lane applies no
    processor: it is summarised once."""
    if top_n < MIN_TOP_N:
        raise ValueError(f"top_n must be an integer >= {MIN_TOP_N}, got {top_n!r}")
    raw_dist = distribution(raw, chosen, top_n, text)
    done = _same_array(processed, raw) or np.array_equal(processed, raw)
    proc = raw_dist if done else distribution(processed, chosen, top_n, text)
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
    )


def _same_array(a: np.ndarray, b: np.ndarray) -> bool:
    """Both are views of the same memory with the same layout (e.g. `logits[0]` taken twice)."""
    if a is b:
        return True
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return False
    layout = (a.shape, a.strides, a.dtype) == (b.shape, b.strides, b.dtype)
    return layout and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
