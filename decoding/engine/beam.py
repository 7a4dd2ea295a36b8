"""Beam search for one lane, token-identical to transformers 4.57.6 `GenerationMixin._beam_search`
(do_sample=False), same `sequences_scores`.

The engine owns the model rows; this class owns the beams' bookkeeping. Each step the engine hands over
the lane's scores — its logits processors applied to `log_softmax(raw logits)`, one row per running beam,
exactly what transformers scores beams with — and gets back which current beam each new running beam
continues (reorder the KV rows with `sources`), the token each appends, every candidate considered (for the
trace tree) and whether the search is over.

Mirrors transformers step by step, in float32 like its tensors:
  - running beam scores start at [0, -1e9, ...] so the first step expands beam 0 only;
  - each step keeps the top `beams_to_keep = max(2, 1 + len(eos)) * num_beams` candidates over all beams;
  - a candidate "hits a stopping criterion" when its token is an eos id or it reaches `max_new_tokens`;
  - the next running beams are the best `num_beams` candidates that did not stop (stopped ones get -1e9);
  - stopped candidates among the top `num_beams` enter the finished pool (`num_beams` slots) with score
    `sum(logprobs) / generated_len ** length_penalty` (generated_len counts the eos token) if they beat its
    worst entry;
  - the search ends when the pool cannot improve (`_check_early_stop_heuristic`), when
    `early_stopping is True` and the pool is full, or when every candidate stopped (max_new_tokens reached).
The prompt length never matters: transformers only uses lengths relative to it.

Ties between exactly equal scores are broken by lower flat index (torch.topk leaves that order unspecified).
Processors with `min_tokens_to_keep` use 2 under beam search in transformers (`1 + (num_beams > 1)`): that is
the engine's job.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from decoding.chain.parameters import check_int, parameter
from decoding.chain.processors import top_candidates
from decoding.records.trace import BeamHypothesis

NEG = np.float32(-1.0e9)  # transformers' "very large negative" score for masked beams


@dataclass
class BeamStepResult:
    """What one step decided. `sources[i]` is the current beam that new running beam i continues, `tokens[i]`
    the token it appends. Both are meaningless once `done` is True (drop the lane's rows, call `finalize`).

    Each hypothesis is one of the `beams_to_keep` best candidates (cumulative `score`, best first):
    `kept` = it is running beam `beam` from now on (none is, at the step that reaches max_new_tokens);
    `finished` = it entered the finished pool (eos or max_new_tokens), its sequence score being
    `score / generated_len ** length_penalty`; neither = pruned. Both only when fewer than num_beams
    candidates are finite (-inf scores), where transformers too keeps finished ones running at -1e9.
    At the last step, no candidate may be kept or finished (all worse than the finished pool).
    """

    sources: list[int]
    tokens: list[int]
    hypotheses: list[BeamHypothesis]  # all `beams_to_keep` candidates, best cumulative score first
    done: bool


def _validate(num_beams, length_penalty, early_stopping, num_return_sequences, eos_token_ids, max_new_tokens):
    check_int("num_beams", num_beams, 2)  # 1 is greedy
    parameter("length_penalty").check(length_penalty)
    parameter("early_stopping").check(early_stopping)
    check_int("num_return_sequences", num_return_sequences, 1, num_beams, "num_beams")
    for token in eos_token_ids:
        check_int("eos_token_ids", token, 0)
    parameter("max_new_tokens").check(max_new_tokens)


class BeamSearch:
    """Beam search state of one lane. Drive it with `step` until `done`, then `finalize`.

    eos_token_ids: the ids that end a hypothesis (transformers' `eos_token_id`, as a list); empty = none.
    token_text: optional id -> text piece, used only to fill the trace's `BeamHypothesis.token_text`.
    """

    def __init__(
        self,
        num_beams: int,
        *,
        max_new_tokens: int,
        length_penalty: float = 1.0,
        early_stopping: bool | str = False,
        num_return_sequences: int = 1,
        eos_token_ids: Sequence[int] = (),
        token_text: Callable[[int], str] | None = None,
    ) -> None:
        eos_token_ids = tuple(eos_token_ids)
        _validate(num_beams, length_penalty, early_stopping, num_return_sequences, eos_token_ids, max_new_tokens)
        self.num_beams = int(num_beams)
        self.length_penalty = float(length_penalty)
        self.early_stopping = early_stopping
        self.num_return_sequences = int(num_return_sequences)
        self.eos_token_ids = np.array(eos_token_ids, dtype=np.int64)
        self.max_new_tokens = int(max_new_tokens)
        self.beams_to_keep = max(2, 1 + len(eos_token_ids)) * self.num_beams
        self._token_text = token_text or (lambda _token_id: "")
        self.length = 0  # tokens generated so far by every running beam
        self.done = False
        self._running = np.zeros((self.num_beams, 0), dtype=np.int64)
        self._running_scores = np.full(self.num_beams, NEG, dtype=np.float32)
        self._running_scores[0] = 0.0
        self._pool_sequences = [self._running[0]] * self.num_beams
        self._pool_scores = np.full(self.num_beams, NEG, dtype=np.float32)
        self._pool_finished = np.zeros(self.num_beams, dtype=bool)
        self._improvable = True  # transformers' is_early_stop_heuristic_unsatisfied

    def running_sequences(self) -> list[list[int]]:
        """Generated ids of each running beam (without the prompt), in beam order: the processors' history."""
        return self._running.tolist()

    def running_scores(self) -> list[float]:
        """Cumulative processed log-probability of each running beam."""
        return self._running_scores.tolist()

    def step(self, scores: np.ndarray) -> BeamStepResult:
        """Advance one token. scores: float32 [num_beams, vocab] = processors(log_softmax(logits)), one row
        per running beam in beam order."""
        scores = self._checked(scores)
        vocab = scores.shape[1]
        accumulated = (scores + self._running_scores[:, None]).reshape(-1)
        top = top_candidates(accumulated, self.beams_to_keep)
        return self._advance(accumulated[top], top // vocab, top % vocab)

    def step_top(self, token_ids: np.ndarray, scores: np.ndarray) -> BeamStepResult:
        """`step` when each beam's best tokens are known: `token_ids` int [num_beams, c] holds every beam's c
        best tokens (c >= beams_to_keep), best first, equal scores lower id first; `scores` float32
        [num_beams, c] their scores. The candidates are then among them: same result, without the
        [num_beams, vocab] scores."""
        if self.done:
            raise RuntimeError("beam search is done; call finalize()")
        token_ids, scores = np.asarray(token_ids, dtype=np.int64), np.asarray(scores, dtype=np.float32)
        if scores.shape != token_ids.shape or scores.shape[0] != self.num_beams:
            raise ValueError(f"token_ids and scores must both be [num_beams={self.num_beams}, c]")
        if scores.shape[1] < self.beams_to_keep:
            raise ValueError(f"c={scores.shape[1]} is too few: beam search keeps {self.beams_to_keep}")
        accumulated = scores + self._running_scores[:, None]
        parents = np.broadcast_to(np.arange(self.num_beams)[:, None], scores.shape).ravel()
        flat_ids, accumulated = token_ids.ravel(), accumulated.ravel()
        top = np.lexsort((flat_ids, parents, -accumulated))[: self.beams_to_keep]  # step's flat-index order
        return self._advance(accumulated[top], parents[top], flat_ids[top])

    def _advance(self, cand_scores: np.ndarray, parents: np.ndarray, tokens: np.ndarray) -> BeamStepResult:
        """The rest of a step, from the `beams_to_keep` best candidates (best first)."""
        cand_sequences = np.concatenate([self._running[parents], tokens[:, None]], axis=1)
        self.length += 1
        stopped = np.isin(tokens, self.eos_token_ids) | (self.length >= self.max_new_tokens)
        entered = self._update_pool(cand_scores, cand_sequences, stopped)
        chosen = self._select_running(cand_scores, cand_sequences, stopped)
        self._improvable = self._still_improvable()
        self.done = not self._has_unfinished(stopped)
        running = chosen if not stopped.all() else chosen[:0]  # max_new_tokens reached: no running beam left
        hypotheses = self._hypotheses(cand_scores, parents, tokens, running, entered)
        return BeamStepResult(parents[chosen].tolist(), tokens[chosen].tolist(), hypotheses, self.done)

    def finalize(self) -> tuple[list[list[int]], list[float]]:
        """The best `num_return_sequences` finished hypotheses (generated ids, eos included) and their
        sequence scores (transformers' `sequences_scores`), best first. Before `done` (a cancelled run) the
        running beams are closed at their current length and ranked with the finished ones."""
        if not self.done:
            self._close_running()
        slots = np.flatnonzero(self._pool_finished)[: self.num_return_sequences]
        return [self._pool_sequences[i].tolist() for i in slots], [float(self._pool_scores[i]) for i in slots]

    def _checked(self, scores: np.ndarray) -> np.ndarray:
        if self.done:
            raise RuntimeError("beam search is done; call finalize()")
        scores = np.asarray(scores, dtype=np.float32)
        if scores.ndim != 2 or scores.shape[0] != self.num_beams:
            raise ValueError(f"scores must be [num_beams={self.num_beams}, vocab], got shape {scores.shape}")
        if scores.size < self.beams_to_keep:
            raise ValueError(f"vocab {scores.shape[1]} too small: beam search keeps {self.beams_to_keep}")
        return scores

    def _select_running(self, cand_scores, cand_sequences, stopped) -> np.ndarray:
        """transformers' _get_running_beams_for_next_iteration: the best candidates that did not stop."""
        masked = cand_scores + np.where(stopped, NEG, np.float32(0.0))
        chosen = top_candidates(masked, self.num_beams)
        self._running = cand_sequences[chosen]
        self._running_scores = masked[chosen]
        return chosen

    def _update_pool(self, cand_scores, cand_sequences, stopped) -> np.ndarray:
        """transformers' _update_finished_beams. Returns the candidates that entered the finished pool."""
        just_finished = stopped.copy()
        just_finished[self.num_beams :] = False  # only the top num_beams candidates may finish
        penalized = cand_scores / np.float32(self.length**self.length_penalty)
        if self._pool_finished.all() and self.early_stopping is True:
            penalized = penalized + NEG
        if not self._improvable:
            penalized = penalized + NEG
        penalized = penalized + np.where(just_finished, np.float32(0.0), NEG)
        keep = self._merge_into_pool(penalized, cand_sequences, just_finished)
        new = keep[keep >= self.num_beams] - self.num_beams
        return new[just_finished[new]]

    def _merge_into_pool(self, scores: np.ndarray, sequences: np.ndarray, finished: np.ndarray) -> np.ndarray:
        """The pool becomes the best `num_beams` of its entries and these; returns the kept positions in
        (pool entries, then these)."""
        merged_scores = np.concatenate([self._pool_scores, scores])
        keep = top_candidates(merged_scores, self.num_beams)
        merged_sequences = self._pool_sequences + list(sequences)
        self._pool_sequences = [merged_sequences[i] for i in keep]
        self._pool_scores = merged_scores[keep]
        self._pool_finished = np.concatenate([self._pool_finished, finished])[keep]
        return keep

    def _still_improvable(self) -> bool:
        """transformers' _check_early_stop_heuristic (sticky: once False it stays False)."""
        if self.early_stopping == "never" and self.length_penalty > 0.0:
            best_length = self.max_new_tokens
        else:
            best_length = self.length
        best_possible = self._running_scores[0] / np.float32(best_length**self.length_penalty)
        worst_finished = np.where(self._pool_finished, self._pool_scores.min(), NEG)
        return self._improvable and bool(np.any(best_possible > worst_finished))

    def _has_unfinished(self, stopped: np.ndarray) -> bool:
        """transformers' _beam_search_has_unfinished_sequences."""
        pool_full = bool(self._pool_finished.all()) and self.early_stopping is True
        return self._improvable and not pool_full and not bool(stopped.all())

    def _hypotheses(self, cand_scores, parents, tokens, running, entered) -> list[BeamHypothesis]:
        beam_of = {int(c): b for b, c in enumerate(running)}
        finished = set(entered.tolist())
        return [
            BeamHypothesis(
                beam=beam_of.get(i, -1),
                parent=int(parents[i]),
                token_id=int(tokens[i]),
                token_text=self._token_text(int(tokens[i])),
                score=float(cand_scores[i]),
                kept=i in beam_of,
                finished=i in finished,
            )
            for i in range(len(tokens))
        ]

    def _close_running(self) -> None:
        """Cancelled search: rank the running beams, scored at their current length, with finished ones."""
        self.done = True
        if self.length == 0:
            return
        penalized = self._running_scores / np.float32(self.length**self.length_penalty)
        self._merge_into_pool(penalized, self._running, np.ones(self.num_beams, dtype=bool))
        self._pool_finished[:] = True  # the search is over: every kept entry is a result
