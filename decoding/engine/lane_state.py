"""Per-lane state of a run: which batch rows a lane owns, its chain (stages, then a selector) and trace.

The engine drives every lane with the same calls per step: `decide` (choose tokens from the logits the
lane holds, build and return StepRecords), `queue` (add (old row, token) pairs to the next batched call),
`receive` (take its new logits rows from that call's output) and at the end `close`. `LaneState` holds what
every lane has (its spec, trace, tokens, chain, forced tokens, rows); its two kinds are siblings that
differ in how they hold rows and choose: `SingleRowLaneState` (greedy, sampling: one row) and `BeamLaneState`
(num_beams rows reordered by BeamSearch), as onnxruntime-genai's greedy and beam searches over one `Search`.
"""

from __future__ import annotations

import functools
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from decoding.chain.chain import build_chain, filters_only, front_masks
from decoding.chain.llama_samplers import breaker_sequences
from decoding.chain.selectors import Candidates, Draw, Selector
from decoding.chain.spec import LaneSpec
from decoding.chain.stages import stage_records
from decoding.engine.beam import NEG, BeamSearch
from decoding.engine.protocol import TextEncoder, TokenText
from decoding.records.stats import LogitsRowCache, Softmax, StepStats, processed_softmax, step_stats
from decoding.records.trace import LaneTrace, StepRecord


def empty_trace(spec: LaneSpec) -> LaneTrace:
    """The trace of a lane that has not taken a step yet: its name, config, processors and markers."""
    return LaneTrace(
        name=spec.name,
        config=spec.to_config(),
        processors=spec.processors(),
        branch=spec.branch.to_dict() if spec.branch else None,
        fanout=spec.fanout.to_dict() if spec.fanout else None,
        replay_of=spec.replay_of.to_dict() if spec.replay_of else None,
    )


class LaneState(ABC):
    """What the engine drives for every lane (the module docstring's verbs); a lane is one of its two kinds."""

    def __init__(
        self,
        index: int,
        spec: LaneSpec,
        prompt_ids: list[int],
        prefix: list[int],
        eos_token_ids: list[int],
        max_new_tokens: int,
        top_n: int,
        tokenizer: TokenText,
    ) -> None:
        self.index = index
        self.spec = spec
        self.trace = empty_trace(spec)
        self.prompt_ids = list(prompt_ids)
        self.tokens: list[int] = []  # generated tokens of the (best) row, prefix included
        self.eos = set(eos_token_ids)
        self.limit = spec.max_new_tokens or max_new_tokens
        self.top_n = top_n
        self.tokenizer = tokenizer
        self.chain = build_chain(
            spec, len(prompt_ids), eos_token_ids,
            breakers=lambda vocab_size, strings: dry_breakers(tokenizer, vocab_size, strings),
        )
        self.forced = dict(spec.forced)
        self.following: SingleRowLaneState | None = None  # a branch lane copies this parent until its branch step
        if spec.branch is not None:
            self.forced[spec.branch.step] = spec.branch.token_id
        if spec.replay_of is not None:
            self.forced[spec.replay_of.step] = spec.replay_of.token_id
        self.rows: list[int] = []  # this lane's rows in the current batch ...
        self.batch: LogitsRowCache | None = None  # ... whose logits it reads for the current step
        self.running = True
        self.tokens.extend(prefix)

    # --------------------------------------------------------------------------------------- engine calls

    @property
    def step(self) -> int:
        return len(self.trace.steps)

    @abstractmethod
    def attach(self, batch: LogitsRowCache, row: int) -> None:
        """Start from one row of the batch (the prefill row, or a parent's row to fork) and its logits."""

    @abstractmethod
    def decide(self, source_ms: float) -> list[StepRecord]:
        """Choose this step's token(s) from the rows the lane holds; returns the records it streams."""

    @abstractmethod
    def queue(self, feed: list[tuple[int, int]]) -> None:
        """Add the (old row, token) pairs of its next rows to the next batched call."""

    def receive(self, batch: LogitsRowCache | None, slots: list[int], position: int) -> int:
        """Take this lane's rows from a batched call's output: `slots[position:]` are the new batch rows of
        the pairs this lane queued (shared with other lanes where identical). Returns the next position."""
        if not self.running:
            self.rows, self.batch = [], None
            return position
        count = len(self.rows)
        self.rows = slots[position : position + count]
        self.batch = batch
        return position + count

    def copy_record(self, record: StepRecord, token_id: int) -> None:
        """A branch lane before its branch step: the parent's step, as is."""
        self.take_prefix(record)
        self.tokens.append(token_id)

    def take_prefix(self, record: StepRecord) -> None:
        """A step the lane did not decide (a Prefix's, a parent's before the branch step): recorded as is, and
        accepted by its chain as the lane's own steps are."""
        self.trace.steps.append(replace(record))
        self.accept(record)

    def accept(self, record: StepRecord) -> None:
        self.chain.accept(record.token_id, record.prob, record.forced)

    def stop(self, reason: str) -> None:
        self.running = False
        if self.trace.finish_reason is None:
            self.trace.finish_reason = reason

    def fail(self, message: str) -> None:
        self.trace.error = message
        self.stop("error")

    def close(self) -> None:
        self.running = False
        self.trace.token_ids = list(self.tokens)
        self.trace.text = self.tokenizer.decode(self.tokens)

    # ------------------------------------------------------------------------------------------ internals

    def record(self, token: int, stats: StepStats, draw: Draw | None = None, forced: bool = False) -> StepRecord:
        """The step's record, with the state its chain carried into the step (XTC's coin, mirostat's mu)."""
        record = StepRecord(step=self.step, token_id=token, token_text=self.tokenizer.piece(token), forced=forced,
                            **stats.record_fields())
        if draw is not None:
            record.draw, record.draw_low, record.draw_high = draw.u, draw.low, draw.high
        self.chain.record_state(record)
        unseen = self.batch.unseen if self.batch is not None else None
        if unseen is not None and self.rows:  # a served model's top-N: what its step did not see
            record.unseen_mass = float(unseen[self.rows[0]])
        return record

    def _record(
        self,
        raw: np.ndarray,
        processed: np.ndarray,
        token: int,
        draw: Draw | None = None,
        forced: bool = False,
        raw_softmax: Softmax | None = None,
        softmax: Softmax | None = None,
    ) -> StepRecord:
        """`raw_softmax` / `softmax`: the rows' Softmax when already computed."""
        piece = self.tokenizer.piece
        stats = step_stats(raw, processed, token, self.top_n, piece, raw_softmax=raw_softmax, softmax=softmax)
        return self.record(token, stats, draw, forced)


class SingleRowLaneState(LaneState):
    """A greedy or sampling lane: one row, one token a step (several such lanes may decide together:
    decoding.engine.row_batch, whose records equal `decide`'s). Both choose through `choose`: a forced token, or
    the chain's selector; only such lanes sample, so only their chains carry state (XTC's coin, mirostat's mu) or
    pick their stages each step (adaptive); the per-stage records are theirs too."""

    def attach(self, batch: LogitsRowCache, row: int) -> None:
        self.rows = [row]
        self.batch = batch

    def decide(self, source_ms: float) -> list[StepRecord]:
        started = time.perf_counter()
        raw, raw_softmax = self.batch.row(self.rows[0]), self.batch.softmax(self.rows[0])
        decided, applied, selector = self.chain.step(raw_softmax)  # the stages this step applies
        processed, stages = self.process_stages(raw, applied) if applied else (raw, None)
        if processed is raw:
            softmax = raw_softmax
        else:
            only_filters = self.chain.filters_only if applied is self.chain.stages else filters_only(applied)
            softmax = processed_softmax(processed, raw_softmax, only_filters)[1] or Softmax.of(processed)
        token, draw, forced = self.choose(Candidates(processed, softmax, self.top_n), selector)
        record = self._record(raw, processed, token, draw, forced, raw_softmax=raw_softmax, softmax=softmax)
        record.adaptive = decided
        if stages is not None:
            self.add_stages(record, raw, raw_softmax, stages, applied)
        record.time_ms = source_ms + (time.perf_counter() - started) * 1000.0
        self.append(record)
        return [record]

    def choose(self, candidates: Candidates, selector: Selector | None = None) -> tuple[int, Draw | None, bool]:
        """The step's (token, draw, forced): the forced token (a replay's draw skipped), else what the selector
        (the chain's unless given: an adaptive step's) chooses among `candidates`."""
        forced = self.forced_token()
        if forced is not None:
            return forced, None, True
        token, draw = (selector or self.chain.selector).select(candidates)
        return token, draw, False

    def queue(self, feed: list[tuple[int, int]]) -> None:
        if self.running and self.rows:  # a branch lane still copying its parent owns no row yet
            feed.append((self.rows[0], self.tokens[-1]))

    def append(self, record: StepRecord) -> None:
        """Take the step: record it, its chain accepts it, extend the tokens, stop on eos, a stop string or the
        length."""
        self.trace.steps.append(record)
        self.accept(record)
        self.tokens.append(record.token_id)
        if record.token_id in self.eos:
            self.stop("eos")
        elif self._hit_stop_string():
            self.stop("stop_string")
        elif len(self.tokens) >= self.limit:
            self.stop("length")

    # ------------------------------------------------------------------------------------------ internals

    def _hit_stop_string(self) -> bool:
        """Whether the lane's text contains a stop string. The whole text is decoded: a stop string may span
        any number of tokens, and a multi-byte character's bytes may span several (0.4 ms for 2000 tokens of
        the default model, beside a model step of 30 ms or more)."""
        if not self.spec.stop_strings:
            return False
        text = self.tokenizer.decode(self.tokens)
        return any(stop in text for stop in self.spec.stop_strings)

    def process_stages(self, raw: np.ndarray, applied: list | None = None) -> tuple[np.ndarray, list[np.ndarray]]:
        """The processed row and each stage's record input (decoding.chain.stages): the ids a front mask stage banned,
        every other stage's output row. `applied`: the lane's stages unless given."""
        applied = self.chain.stages if applied is None else applied
        history, front = self.history(), front_masks(applied)
        ids, scores, stages = np.array([history], dtype=np.int64), raw[None], []
        for index, processor in enumerate(applied):
            scores = processor(ids, scores)  # processors never write into their input
            stages.append(processor.banned(history, raw.size) if index < front else scores[0])
        return scores[0], stages

    def add_stages(
        self, record: StepRecord, raw: np.ndarray, raw_softmax: Softmax, stages: list[np.ndarray],
        applied: list | None = None,
    ) -> None:
        """The record's per-stage view of the chain (decoding.chain.stages)."""
        applied = self.chain.stages if applied is None else applied
        record.stages = stage_records([p.name for p in applied], raw, raw_softmax, stages, front_masks(applied),
                                      record.token_id, record.kept, record.prob)

    def history(self) -> list[int]:
        """The ids the processors read: prompt and generated tokens."""
        return self.prompt_ids + self.tokens

    def forced_token(self) -> int | None:
        """The token forced at this step, or None. A replay of a sampled lane still draws at its forced step
        and discards the draw, so that its later draws stay the original's."""
        step = self.step
        if step not in self.forced:
            return None
        if self.spec.replay_of is not None and step == self.spec.replay_of.step:
            self.chain.selector.skip()
        return self.forced[step]


@dataclass
class BeamParent:
    """One running beam at a beam lane's step, as step mode shows it."""

    beam: int
    token_ids: list[int]  # its tokens before the step
    text: str  # their text
    score: float  # its cumulative processed log-probability
    record: StepRecord  # its processed distribution at the step (top lists; token_id its best candidate)


class BeamLaneState(LaneState):
    """A beam lane: num_beams rows reordered every step by BeamSearch; its trace follows the best sequence."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.beam: BeamSearch | None = None  # made when the lane gets its row (after a prefix or branch copy)
        self.prefix_len = 0
        self.beam_tokens: list[list[int]] = []
        self.beam_records: list[list[StepRecord]] = []
        self.finished_records: dict[tuple[int, ...], list[StepRecord]] = {}
        self.pending: list[tuple[int, int]] = []
        self._last_step: tuple | None = None  # what the last step read (its rows, scores, beams): parents() shows it

    def attach(self, batch: LogitsRowCache, row: int) -> None:
        spec = self.spec
        self.prefix_len = len(self.tokens)
        self.beam = BeamSearch(
            spec.num_beams,
            max_new_tokens=self.limit - self.prefix_len,
            length_penalty=spec.length_penalty,
            early_stopping=spec.early_stopping,
            num_return_sequences=spec.num_return_sequences,
            eos_token_ids=sorted(self.eos),
            token_text=self.tokenizer.piece,
        )
        self.beam_tokens = [[] for _ in range(spec.num_beams)]
        self.beam_records = [[] for _ in range(spec.num_beams)]
        self.rows = [row] * spec.num_beams
        self.batch = batch

    def decide(self, source_ms: float) -> list[StepRecord]:
        started = time.perf_counter()
        raw = [self.batch.row(row) for row in self.rows]
        softmaxes = [self.batch.softmax(row) for row in self.rows]  # shared with the raw statistics
        best = self._best_logprobs(softmaxes) if self._plain_step() else None
        before = (self.step, self.step in self.forced, self.beam_tokens, self.beam.running_scores())
        if best is not None:  # the candidates are among each beam's best tokens: no [beams, vocab] scores
            scores, result = None, self.beam.step_top(*best)
        else:
            scores = self._beam_scores(raw, softmaxes)
            result = self.beam.step(scores)
        new_records = self._hypothesis_records(raw, softmaxes, scores, result.hypotheses)
        self._last_step = (raw, softmaxes, scores, *before)  # references only: a run that never asks pays nothing
        elapsed = source_ms + (time.perf_counter() - started) * 1000.0
        for record in new_records.values():
            record.time_ms = elapsed
            record.beams = result.hypotheses
        self._advance_beams(result, new_records)
        best = self._best_record(result, new_records)
        self.trace.steps.append(best)
        if result.done:
            self.running = False  # the reason (eos or length) is known once finalized, in close()
        return [best]

    def queue(self, feed: list[tuple[int, int]]) -> None:
        if self.running:
            feed.extend(self.pending)

    def parents(self) -> list[BeamParent]:
        """The beams the last step extended (the live ones: at step 0 only beam 0), each with its tokens, its
        score and its processed distribution at that step (the record's token: its best candidate)."""
        if self._last_step is None:
            return []
        raw, softmaxes, scores, step, forced, tokens, beam_scores = self._last_step
        shown = []
        for beam, (own, score) in enumerate(zip(tokens, beam_scores, strict=True)):
            if score <= NEG / 2:  # not a hypothesis yet (transformers' -1e9 start)
                continue
            processed = raw[beam] if scores is None else scores[beam]
            softmax = softmaxes[beam] if scores is None else None
            token = softmax.best_token() if softmax is not None else int(np.argmax(processed))
            record = self._record(raw[beam], processed, token, forced=forced, raw_softmax=softmaxes[beam],
                                  softmax=softmax)
            ids = self.tokens[: self.prefix_len] + own
            shown.append(BeamParent(beam, ids, self.tokenizer.decode(ids), score, replace(record, step=step)))
        return shown

    def close(self) -> None:
        self.running = False
        if self.beam is not None:
            self._finalize()
        super().close()

    def _finalize(self) -> None:
        sequences, scores = self.beam.finalize()
        prefix = self.tokens[: self.prefix_len]
        self.trace.sequences = [prefix + seq for seq in sequences]
        self.trace.sequence_scores = scores
        best = sequences[0] if sequences else self.beam_tokens[0]
        path = self.finished_records.get(tuple(best)) or self._running_path(best)
        self.trace.steps = self.trace.steps[: self.prefix_len] + [replace(r) for r in path]
        self.tokens = prefix + list(best)
        if self.trace.finish_reason is None:
            self.trace.finish_reason = "eos" if best and best[-1] in self.eos else "length"

    # ------------------------------------------------------------------------------------------ internals

    def _ids(self, rows_tokens: Sequence[Sequence[int]]) -> np.ndarray:
        return np.array([self.prompt_ids + list(tokens) for tokens in rows_tokens], dtype=np.int64)

    def _beam_scores(self, raw: list[np.ndarray], softmaxes: list[Softmax | None]) -> np.ndarray:
        pairs = zip(raw, softmaxes, strict=True)
        raw_logprobs = np.stack([np.full_like(row, -np.inf) if sm is None else sm.log_softmax() for row, sm in pairs])
        logprobs = raw_logprobs
        if self.chain.stages:
            logprobs = self.chain.apply(self._ids(self._histories()), raw_logprobs)
        step = self.step
        if step in self.forced:  # every beam must take the forced token
            token = self.forced[step]
            masked = np.full_like(logprobs, -np.inf)
            masked[:, token] = logprobs[:, token]
            if not np.isfinite(masked[:, token]).any():  # banned by the processors on every beam: taken all the
                masked[:, token] = raw_logprobs[:, token]  # same, as a single-row lane takes its forced token
            if not np.isfinite(masked[:, token]).any():  # no probability even in the raw rows (a served lane's
                masked[:, token] = 0.0  # top-N, a -inf logit): taken as certain, the raw record says it was not
            logprobs = masked
        return logprobs

    def _plain_step(self) -> bool:
        """No processor and no forced token: the beams score tokens by their raw log-probabilities."""
        return not self.chain.stages and self.step not in self.forced

    def _best_logprobs(self, softmaxes: list[Softmax | None]) -> tuple[np.ndarray, np.ndarray] | None:
        """Each beam's best `beams_to_keep` tokens and their log-probabilities (as log_softmax computes them),
        or None unless every row is dense (positions = token ids) with enough tokens."""
        count = self.beam.beams_to_keep
        if any(sm is None or sm.ids is not None or sm.kept < count for sm in softmaxes):
            return None
        ids = np.stack([sm.best(count) for sm in softmaxes])
        return ids, np.stack([sm.log_probs_at(best) for sm, best in zip(softmaxes, ids, strict=True)])

    def _histories(self) -> list[list[int]]:
        prefix = self.tokens[: self.prefix_len]
        return [prefix + tokens for tokens in self.beam_tokens]

    def _hypothesis_records(self, raw, softmaxes, scores, hypotheses) -> dict[int, StepRecord]:
        """A StepRecord for every candidate that is kept or finished (index in `hypotheses` -> record).
        Statistics are computed once per parent beam; siblings differ only in the chosen token."""
        records: dict[int, StepRecord] = {}
        per_parent: dict[int, StepRecord] = {}
        forced = self.step in self.forced
        plain = self._plain_step()  # softmax(log_softmax(x)) is softmax(x): summarise once
        for i, hyp in enumerate(hypotheses):
            if not (hyp.kept or hyp.finished):
                continue
            parent = hyp.parent
            processed = raw[parent] if plain else scores[parent]
            first = per_parent.get(parent)
            if first is None:
                shared = {"raw_softmax": softmaxes[parent], "softmax": softmaxes[parent] if plain else None}
                record = self._record(raw[parent], processed, hyp.token_id, forced=forced, **shared)
                records[i] = per_parent[parent] = record
            else:
                records[i] = _sibling(first, raw[parent], processed, hyp.token_id, self.tokenizer.piece(hyp.token_id))
        return records

    def _advance_beams(self, result, records: dict[int, StepRecord]) -> None:
        old_tokens, old_records, old_rows = self.beam_tokens, self.beam_records, self.rows
        for i, hyp in enumerate(result.hypotheses):
            if hyp.finished:
                self.finished_records[tuple(old_tokens[hyp.parent] + [hyp.token_id])] = old_records[hyp.parent] + [
                    records[i]
                ]
        kept = sorted((hyp.beam, i) for i, hyp in enumerate(result.hypotheses) if hyp.kept)
        self.beam_tokens = [old_tokens[result.hypotheses[i].parent] + [result.hypotheses[i].token_id] for _, i in kept]
        self.beam_records = [old_records[result.hypotheses[i].parent] + [records[i]] for _, i in kept]
        self.pending = [(old_rows[src], token) for src, token in zip(result.sources, result.tokens, strict=True)]

    def _best_record(self, result, records: dict[int, StepRecord]) -> StepRecord:
        """The streamed record: the best running beam's step (or, at the end, the best candidate's)."""
        if self.beam_records and self.beam_records[0] and not result.done:
            return self.beam_records[0][-1]
        return records[min(records)]

    def _running_path(self, best: list[int]) -> list[StepRecord]:
        for tokens, records in zip(self.beam_tokens, self.beam_records, strict=True):
            if tokens == list(best):
                return records
        return self.beam_records[0] if self.beam_records else []


def _sibling(record: StepRecord, raw: np.ndarray, processed: np.ndarray, token: int, text: str) -> StepRecord:
    """`record` (same distributions) with another chosen token: only its probabilities change."""
    logprob_raw = float(raw[token]) - _log_normalizer(raw, record.token_id, record.logprob_raw)
    logprob = float(processed[token]) - _log_normalizer(processed, record.token_id, record.logprob)
    return replace(
        record,
        token_id=token,
        token_text=text,
        logprob=logprob,
        logprob_raw=logprob_raw,
        prob=math.exp(logprob),
        prob_raw=math.exp(logprob_raw),
    )


def _log_normalizer(scores: np.ndarray, known_token: int, known_logprob: float) -> float:
    """log(sum(exp(scores))), from a token whose log-probability is known when it is finite."""
    if math.isfinite(known_logprob):
        return float(scores[known_token]) - known_logprob
    top = float(scores.max())
    return top + math.log(float(np.exp(scores.astype(np.float64) - top).sum()))


def new_lane_state(index: int, spec: LaneSpec, *args: Any) -> LaneState:
    """The state of a lane of `spec`'s kind (LaneState's arguments: prompt ids, prefix, eos ids, max_new_tokens,
    top_n, tokenizer)."""
    return (BeamLaneState if spec.is_beam else SingleRowLaneState)(index, spec, *args)


@functools.lru_cache(maxsize=8)  # a fan-out's members share one scan of the vocabulary
def dry_breakers(tokenizer: TokenText, vocab_size: int, strings: tuple[str, ...]) -> tuple:
    """DRY's sequence breakers over the model's vocabulary (llama.cpp's processing of its breaker strings)."""
    if isinstance(tokenizer, TextEncoder):
        def tails(text: str) -> list[int]:
            return tokenizer.encode(text, add_special_tokens=False)
    else:
        def tails(text: str) -> list[int]:
            return []
    return tuple(breaker_sequences(strings, vocab_size, tokenizer.piece, tails))
