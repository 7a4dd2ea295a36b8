"""Single-row lanes decided together: the greedy and sampled lanes of a step that apply the same processors
(a seed fan-out's members, lanes of one configuration) form one group.

Like a batch-first sampler (vLLM's `v1/sample`), a group works on its distinct rows, not on its lanes: rows
that continue the same row with the same token (fan-out members before they part) are processed,
summarised and sorted once, each sampled lane drawing from them with its own generator; raw rows are
summarised once per batch row for every lane and group reading them; the top-N probabilities of all rows
are one small matrix. Unlike a GPU sampler, the vocabulary-wide passes are not run over the group's
[rows, vocab] matrix: on a 2-core laptop CPU a [32, 49152] float32 matrix (6 MB) leaves the cache between
passes, while one row's passes run back to back in cache (measured: 136 vs 106 us per row for processors,
softmax and entropy), so each row is processed, summarised and drawn from before the next.

Each row also does less than the per-row path: a draw first walks the statistics' top-N (where u falls
most of the time) and only then the whole row, a processor that only filters lets the row keep its raw
top-N, and the -inf positions found once serve the softmax and the draw.

Every record is identical to `SingleRowLaneState.decide`'s, which stays the reference (Engine(batched_rows=False));
tests run both on the same inputs. A lane alone in its group, and the lanes of a row the processors make
unusual (no finite score, NaN, +inf), are decided by it (the former in the engine's lane order, as before).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from decoding.chain.processors import Processor
from decoding.chain.selectors import Candidates, Draw
from decoding.engine.lane_state import SingleRowLaneState
from decoding.records.stats import (
    Softmax,
    chosen_logprob,
    derived_softmax,
    processed_softmax,
    spreads_of,
    stats_of,
    with_chosen,
)
from decoding.records.trace import StepRecord


def decide_together(lanes: Sequence[SingleRowLaneState], source_ms: float, top_n: int) -> list[SingleRowLaneState]:
    """Decide the step of the lanes in `lanes` (running single-row lanes with usable logits rows) that apply
    the same processors on the same batch as another: each group together, a record appended to each lane.
    Returns them; a lane alone in its group is left to the per-row path (nothing to share)."""
    groups: dict[tuple, list[SingleRowLaneState]] = {}
    for lane in lanes:
        groups.setdefault(_group_key(lane), []).append(lane)
    decided = []
    for group in groups.values():
        if len(group) > 1:
            _RowGroup(group, top_n, group[0].tokenizer.piece).decide(source_ms)  # one batch: one model's pieces
            decided.extend(group)
    return decided


def _group_key(lane: SingleRowLaneState) -> tuple:
    """Lanes with equal keys process equal rows identically: the same batch, history length and processors. A
    lane whose chain carries state (XTC's coin, mirostat's mu, adaptive) is a group of its own (the per-row path)."""
    return id(lane.batch), len(lane.tokens), lane.chain.key, id(lane) if lane.chain.stateful else None


@dataclass
class _Choice:
    """One lane's decision at this step."""

    lane: SingleRowLaneState
    slot: int  # its row among the group's distinct rows
    token: int
    draw: Draw | None
    forced: bool


@dataclass
class _Row:
    """One distinct row of a group after the processors: what its lanes chose from and are summarised by."""

    processed: np.ndarray | None  # None for a masked row: raw with `softmax.holes` filtered, never built
    holes: np.ndarray | None  # positions of its -inf scores, when the processors ran and left them few
    softmax: Softmax
    best: np.ndarray  # softmax.best's positions: the top-N list
    unchanged: bool  # the processors left the raw row as it was: summarised as raw (as step_stats does)
    entropy: float | None  # of the processed distribution, unless unchanged
    # what decoding.chain.stages reads of each stage (SingleRowLaneState.process_stages's)
    stages: list[np.ndarray] | None


class _RowGroup:
    """One group's step: each distinct row processed, summarised and drawn from in turn, then every lane's
    statistics (the top-N probabilities of all rows together) and record."""

    def __init__(self, lanes: list[SingleRowLaneState], top_n: int, text: Callable[[int], str]) -> None:
        self.top_n = top_n
        self.text = text
        self.batch = lanes[0].batch
        self.stages: list[Processor] = lanes[0].chain.stages
        self.filters_only, self.masks_only = lanes[0].chain.filters_only, lanes[0].chain.masks_only
        lanes_of: dict[int, list[SingleRowLaneState]] = {}  # distinct batch row -> the lanes reading it
        for lane in lanes:
            lanes_of.setdefault(lane.rows[0], []).append(lane)
        self.rows, self.lanes_of = list(lanes_of), list(lanes_of.values())
        self.raw_spreads = self.batch.spreads(self.rows, top_n, text)
        self.raw_softmaxes = [self.batch.softmax(row) for row in self.rows]

    def decide(self, source_ms: float) -> None:
        """Append every lane's record (time_ms: the model call plus the lane's share of the group's work)."""
        started = time.perf_counter()
        rows: list[_Row | None] = []
        choices: list[_Choice] = []
        for slot, lanes in enumerate(self.lanes_of):
            rows.append(self._row(slot))
            if rows[-1] is None:  # the per-row path says what happens to such a row
                for lane in lanes:
                    lane.decide(source_ms)
            else:
                choices.extend(self._choose(slot, rows[-1]))
        records = self._records(rows, choices)
        share = (time.perf_counter() - started) * 1000.0 / max(len(choices), 1)
        for choice, record in zip(choices, records, strict=True):
            record.time_ms = source_ms + share
            choice.lane.append(record)

    def _row(self, slot: int) -> _Row | None:
        """The row's processed Softmax and top-N (None if it is not usual), its vocabulary-wide passes back to
        back."""
        raw, raw_softmax = self.batch.row(self.rows[slot]), self.raw_softmaxes[slot]
        if not self.stages:
            return _Row(raw, None, raw_softmax, self.batch.best(self.rows[slot], self.top_n), True, None, None)
        if self.masks_only:
            row = self._masked_row(slot, raw_softmax)
            if row is not None:
                return row
        processed, stages = self.lanes_of[slot][0].process_stages(raw)  # every lane on a row has its history
        holes, softmax = processed_softmax(processed, raw_softmax, self.filters_only)
        if softmax is None:
            return None
        if self.filters_only:  # processed = raw with some -inf: unchanged when it keeps as many
            unchanged = softmax.kept == raw_softmax.kept
            best = self._raw_best_if_kept(slot, processed, softmax)
        else:
            unchanged, best = np.array_equal(processed, raw), None
        best = softmax.best(min(self.top_n, softmax.kept)) if best is None else best
        return _Row(processed, holes, softmax, best, unchanged, None if unchanged else softmax.entropy(), stages)

    def _masked_row(self, slot: int, raw_softmax: Softmax) -> _Row | None:
        """The row of a chain that only bans ids read off the history, derived from raw's Softmax as
        processed_softmax derives the processed row, without building it. None where processed_softmax would
        compute a new Softmax (raw filtered, masked not accurate enough)."""
        ids = self.lanes_of[slot][0].history()  # every lane on a row has its history
        vocab = raw_softmax.row.size
        bans = [processor.banned(ids, vocab) for processor in self.stages]
        holes = bans[0] if len(bans) == 1 else np.unique(np.concatenate(bans))
        softmax = derived_softmax(raw_softmax, holes)
        if softmax is None:
            return None
        unchanged = softmax is raw_softmax
        best = softmax.best(min(self.top_n, softmax.kept))
        return _Row(None, softmax.holes, softmax, best, unchanged, None if unchanged else softmax.entropy(), bans)

    def _raw_best_if_kept(self, slot: int, processed: np.ndarray, softmax: Softmax) -> np.ndarray | None:
        """A dense row that keeps every one of its raw best tokens has them as its best tokens too (same
        scores, same order); None otherwise."""
        if softmax.ids is not None or self.raw_softmaxes[slot].ids is not None:
            return None
        best = self.batch.best(self.rows[slot], self.top_n)
        return best if (processed[best] > -np.inf).all() else None

    def _choose(self, slot: int, row: _Row) -> list[_Choice]:
        """The decisions of the row's lanes, while the row is in cache (SingleRowLaneState.choose: a forced
        token, or the lane's selector: argmax or a draw with its own generator, the walk found once for all)."""
        candidates = Candidates(row.processed, row.softmax, self.top_n, row.holes, row.best)
        return [_Choice(lane, slot, *lane.choose(candidates)) for lane in self.lanes_of[slot]]

    def _records(self, rows: list[_Row | None], choices: list[_Choice]) -> list[StepRecord]:
        """Every choice's StepRecord; the processed spreads of the changed rows computed together."""
        changed = [slot for slot, row in enumerate(rows) if row is not None and not row.unchanged]
        found = spreads_of([rows[slot].softmax for slot in changed], [rows[slot].best for slot in changed],
                           [rows[slot].entropy for slot in changed], self.top_n, self.text)
        spreads = dict(zip(changed, found, strict=True))
        records = []
        for choice in choices:
            slot, token = choice.slot, choice.token
            raw = with_chosen(self.raw_spreads[slot], chosen_logprob(self.raw_softmaxes[slot], token))
            row = rows[slot]
            proc = raw if row.unchanged else with_chosen(spreads[slot], chosen_logprob(row.softmax, token))
            record = choice.lane.record(token, stats_of(raw, proc), choice.draw, choice.forced)
            if row.stages is not None:
                choice.lane.add_stages(record, self.batch.row(self.rows[slot]), self.raw_softmaxes[slot], row.stages)
            records.append(record)
        return records
