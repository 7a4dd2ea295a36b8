"""What a lane on a served model's top-N knows of each distribution, and what it does not: every view's marker
("top 1,000 of 49,152; tail ≤ 0.8 %") and the raw entropy as bounds.

A served step returned N of V tokens with their true probabilities p_i; the record's raw statistics are of those N
renormalised (q_i = p_i / (1 - u)), with u (StepRecord.unseen_mass) the mass on the V - N tokens it did not
return, none of which is more probable than the least returned one. So the true raw entropy is
(1 - u) H(q) - (1 - u) log(1 - u) + H_tail, H_tail between the tail packed into tokens as probable as allowed
(the least) and the tail spread evenly over the V - N tokens (the most).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from decoding.records.trace import LaneTrace, StepRecord


def served_of(lane: LaneTrace) -> dict | None:
    """The served model a lane ran on (LaneModelInfo.served), or None."""
    return lane.model.served if lane.model is not None else None


def is_partial(lane: LaneTrace) -> bool:
    """Whether a lane's distributions are a top-N of the vocabulary (a served model asked for fewer)."""
    served = served_of(lane)
    return bool(served) and served["alternatives"] < served["vocab_size"]


def partial_note(lane: LaneTrace) -> str | None:
    """The marker every view shows of a partial lane, with its largest unseen mass; None when it is complete.

    >>> from decoding.records.trace import LaneTrace
    >>> from decoding.records.model_info import LaneModelInfo
    >>> lane = LaneTrace("s", {}, [], model=LaneModelInfo("llamacpp+http://h:1", served={"alternatives": 100,
    ...                  "vocab_size": 151936}))
    >>> partial_note(lane)
    'top 100 of 151,936'
    """
    parts = partial_parts(lane)
    if parts is None:
        return None
    alternatives, vocab_size, tail = parts
    note = f"top {alternatives:,} of {vocab_size:,}"
    return f"{note}; tail ≤ {tail:.1%}" if tail is not None else note


def partial_parts(lane: LaneTrace) -> tuple[int, int, float | None] | None:
    """(alternatives returned a step, vocabulary size, the largest unseen mass so far or None) of a partial lane;
    None when it is complete (a front end words them in its own language)."""
    if not is_partial(lane):
        return None
    served = served_of(lane)
    tails = [step.unseen_mass for step in lane.steps if step.unseen_mass is not None]
    return served["alternatives"], served["vocab_size"], max(tails) if tails else None


def raw_entropy_bounds(step: StepRecord, returned: int, vocab_size: int) -> tuple[float, float]:
    """(least, most) the true raw entropy (nats) can be, for a step that returned `returned` of `vocab_size` tokens
    (both equal: the entropy itself, when nothing was unseen).

    >>> from decoding.records.trace import StepRecord, TokenProb
    >>> step = StepRecord(0, 1, "a", 1, 0.5, 0, 0, 0, math.log(2), 0, 0, 2, 0, 0, [],
    ...                   [TokenProb(1, "a", 0.5, 0), TokenProb(2, "b", 0.5, 1)], unseen_mass=0.2)
    >>> low, high = raw_entropy_bounds(step, 2, 10)
    >>> round(low, 4), round(high, 4)
    (1.0549, 1.4708)
    """
    u = step.unseen_mass or 0.0
    if u <= 0.0 or returned >= vocab_size:
        return step.entropy_raw, step.entropy_raw
    seen = (1.0 - u) * step.entropy_raw - (1.0 - u) * math.log(1.0 - u)
    high = u * math.log((vocab_size - returned) / u)
    cap = (1.0 - u) * min((entry.prob for entry in step.top_raw), default=1.0)  # >= the least returned: a valid cap
    return seen + _packed_entropy(u, cap), seen + high


def _packed_entropy(mass: float, cap: float) -> float:
    """-sum p log p of `mass` split into as few parts of at most `cap` as can hold it (the least entropy)."""
    if cap <= 0.0:
        return 0.0
    full = math.floor(mass / cap)
    rest = mass - full * cap
    return -full * cap * math.log(cap) - (rest * math.log(rest) if rest > 0 else 0.0)


def mean_raw_entropy_bounds(lane: LaneTrace) -> tuple[float, float] | None:
    """A partial lane's mean raw entropy over its steps, as (least, most); None for a complete lane."""
    served = served_of(lane)
    if not is_partial(lane) or not lane.steps:
        return None
    bounds: Sequence[tuple[float, float]] = [
        raw_entropy_bounds(step, served["alternatives"], served["vocab_size"]) for step in lane.steps]
    return (sum(b[0] for b in bounds) / len(bounds), sum(b[1] for b in bounds) / len(bounds))
