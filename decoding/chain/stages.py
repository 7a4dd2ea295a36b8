"""The distribution after each stage of a lane's processor chain, recorded with every step (StepRecord.stages),
so that a view can show at which stage the chosen token (or any token of the top list) died.

For each stage, in the chain's order: how many tokens it left (`kept`), the share of the probability of the
distribution before it that it kept (`mass`: 1.0 for a stage that only reshapes), and the chosen token's rank
(0 = most likely, equal scores lower id first; None once a stage removed it) and probability after it. The
distribution before the first stage is softmax(logits); after the last one it is the step's processed
distribution (its `kept` and `prob` are the record's).

Cost: the mask stages at the chain's front (no_repeat_ngram_size, bad_words_ids, min_new_tokens: the ids they
ban) are derived from the raw row's weights and the banned ids, without a pass over the vocabulary; every other
stage costs a softmax of its output row (the last stage's is the record's already) plus a count and a rank
comparison. Both decision paths (per row and batched rows) call `stage_records` with the same stages, so their
records are identical.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from decoding.records.stats import Softmax
from decoding.records.trace import StageRecord  # the record it computes (defined beside StepRecord, which holds it)

Stage = np.ndarray  # a stage's output row (float32 [vocab]), or for a front mask stage the sorted ids it banned


def stage_records(
    names: Sequence[str],
    raw: np.ndarray,
    raw_softmax: Softmax,
    stages: Sequence[Stage],
    front_masks: int,
    chosen: int,
    last_kept: int,
    last_prob: float,
) -> list[StageRecord]:
    """The StageRecords of one step: `stages[i]` is stage i's output row, except the first `front_masks` stages
    (mask stages before any other), given as the ids they banned. `last_kept` / `last_prob`: the step record's
    kept count and chosen probability, the last stage's."""
    records = []
    previous: _RawFront | _Probs | None = _RawFront(raw, raw_softmax)
    if not previous.derivable:  # raw filtered already: the front masks' rows, each with the bans before it
        stages, front_masks = _front_rows(raw, stages, front_masks), 0
    for index, (name, stage) in enumerate(zip(names, stages, strict=True)):
        if index < front_masks:
            record, previous = previous.ban(name, stage, chosen)
            if index == len(stages) - 1:  # the record's own numbers (the same distribution, one rounding)
                record = record._replace(kept=last_kept, prob=last_prob)
        else:
            last = (last_kept, last_prob) if index == len(stages) - 1 else None
            record, previous = _row_stage(name, stage, previous, chosen, last)
        records.append(record)
    return records


def _front_rows(raw: np.ndarray, stages: Sequence[Stage], front_masks: int) -> list[Stage]:
    rows, row = [], raw
    for bans in stages[:front_masks]:
        row = row.copy()
        row[bans] = -np.inf
        rows.append(row)
    return rows + list(stages[front_masks:])


class _RawFront:
    """The distribution before the first stage that is not a front mask: the raw one less the ids banned so far,
    from raw's weights (a dense raw Softmax), or as a row (raw filtered already)."""

    def __init__(self, raw: np.ndarray, raw_softmax: Softmax, banned: np.ndarray | None = None,
                 total: float | None = None) -> None:
        self.raw, self.softmax = raw, raw_softmax
        self.banned = np.zeros(0, dtype=np.int64) if banned is None else banned
        self.total = raw_softmax.total if total is None else total
        self.derivable = raw_softmax.ids is None and raw_softmax.holes is None and not raw_softmax.filtered

    def ban(self, name: str, bans: np.ndarray, chosen: int) -> tuple[StageRecord, _RawFront]:
        weights = self.softmax.weights
        banned = np.union1d(self.banned, bans)
        fresh = np.setdiff1d(bans, self.banned, assume_unique=True)
        total = self.total - float(weights[fresh].astype(np.float64).sum())
        if total < 1e-9 * self.softmax.total:  # the bans took nearly all: the rest summed, not a difference's noise
            kept = np.ones(self.raw.size, dtype=bool)
            kept[banned] = False
            total = _sum_where(weights, kept)
        kept_chosen = not np.isin(chosen, banned)
        rank = None
        if kept_chosen:
            value = self.raw[chosen]
            above = (self.raw[banned] > value) | ((self.raw[banned] == value) & (banned < chosen))
            rank = _rank(self.raw, chosen) - int(np.count_nonzero(above))
        front = _RawFront(self.raw, self.softmax, banned, total)
        probs = front._probs()
        prob = float(probs.weights[chosen]) / probs.total if kept_chosen and probs.total > 0 else 0.0
        record = StageRecord(name, self.raw.size - banned.size, total / self.total if self.total > 0 else 0.0, rank,
                             prob)
        return record, front

    @property
    def support(self) -> int:
        """How many tokens this distribution gives a probability."""
        return self.raw.size - self.banned.size if self.derivable else self.softmax.kept

    def mass_kept(self, finite: np.ndarray) -> float:
        """The probability (of this distribution) on the positions `finite`."""
        probs = self._probs()
        return _sum_where(probs.weights, finite) / probs.total if probs.total > 0 else 0.0

    def _probs(self) -> _Probs:
        """This distribution's weights: raw's less the banned ones; where the bans took every weight raw's
        float32 softmax kept (a ban on a token 3000 logits above the rest), the rest's own softmax."""
        if self.derivable and self.total > 0:
            return _Probs(self.softmax.weights, self.total, self.support)
        row = self.raw  # not derivable: nothing banned, raw's own softmax (no copy of the row)
        if self.banned.size:
            row = row.copy()
            row[self.banned] = -np.inf
        if not np.any(row > -np.inf):
            return _Probs(np.zeros_like(row), 0.0, 0)
        return _Probs.of(row)


class _Probs:
    """A stage output's softmax (float32 weights, float64 total), as the next stage's `previous`."""

    def __init__(self, weights: np.ndarray, total: float, support: int) -> None:
        self.weights, self.total, self.support = weights, total, support

    @classmethod
    def of(cls, row: np.ndarray, support: int | None = None) -> _Probs:
        with np.errstate(invalid="ignore"):
            weights = np.exp(row - row.max())
        support = int(np.count_nonzero(row > -np.inf)) if support is None else support
        return cls(weights, float(weights.sum(dtype=np.float64)), support)

    def mass_kept(self, finite: np.ndarray) -> float:
        return _sum_where(self.weights, finite) / self.total


def _sum_where(weights: np.ndarray, finite: np.ndarray) -> float:
    return float(np.sum(weights, where=finite, dtype=np.float64))


def _row_stage(
    name: str, row: np.ndarray, previous: _RawFront | _Probs, chosen: int, last: tuple[int, float] | None
) -> tuple[StageRecord, _Probs | None]:
    finite = row > -np.inf
    kept = int(np.count_nonzero(finite))
    mass = 1.0 if kept == previous.support else previous.mass_kept(finite)  # a stage never revives a token
    alive = bool(finite[chosen])
    if last is not None:  # the step's processed distribution: the record knows its probability
        prob, probs = last[1], None
    else:
        probs = _Probs.of(row, kept)
        prob = float(probs.weights[chosen]) / probs.total if alive else 0.0
    return StageRecord(name, kept, mass, _rank(row, chosen) if alive else None, prob), probs


def _rank(row: np.ndarray, chosen: int) -> int:
    """How many tokens come before `chosen` in descending order (equal scores: lower id first)."""
    value = row[chosen]
    return int(np.count_nonzero(row > value)) + int(np.count_nonzero(row[:chosen] == value))
