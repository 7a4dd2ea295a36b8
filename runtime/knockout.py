"""Knock-out attribution on ONNX Runtime: the logits after the last position of a sequence when chosen positions
are hidden from every later position (their keys masked for every later query; positions unchanged).

    knockout = Knockout(decoder)                  # an OnnxDecoder of a prepared model (its in-place graph)
    rows = knockout.run(token_ids, [[0], [1], [3, 4]], candidate_ids=[a, b], progress=callback)
    rows.logits [rows, 2]   rows.log_norm [rows]   rows.top_ids [rows]   rows.base_*: the plain run

Exact, forward passes only, batched. Hiding the set H leaves every position up to min(H) as it was, so a row
continues one plain run's keys and values of positions 0..P-1 (P = min(H) + 1) and recomputes positions P..T-1
only, under a mask that hides H from the later queries: half the work of a full recompute per row on average.
Rows are taken from the latest P down, packed into one call while they fit `max_tokens` (rows x new positions):
a call's rows share its smallest P (each row recomputes from there; the positions it recomputes before its own
min(H) come out as in the plain run). It runs the decoder's in-place graph (runtime.in_place_kv), whose
Attention ops read a per-row mask [rows, 1, S, capacity] given as an input: the export's 2D attention_mask cannot
hide a key from later queries only. The keys and values of every call are a device copy of the plain run's
(RowGather), so the plain run is made once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import onnxruntime as ort
from onnx import helper

from decoding.analysis.why import KnockoutCancelled

# (rows done, rows in all) -> True to stop; called before the first call and after each.
KnockoutProgress = Callable[[int, int], bool | None]
MAX_TOKENS = 1024  # new positions per call (rows x S): bounds a call's activations (a 1,024-token prefill's)
MAX_ROWS = 32
PLAIN_CHUNK = 256  # tokens per call of the plain run (runtime.kv_cache.PREFILL_CHUNK)


@dataclass(frozen=True)
class KnockoutRows:
    """The logits at the last position of the plain run (base_*) and of each knock-out row, reduced to what
    attribution reads: the candidates' logits, log of the softmax's normaliser (log p = logit - log_norm) and the
    best token."""

    base_logits: np.ndarray  # float32 [C]: the candidates' plain logits
    base_log_norm: float
    base_top_id: int
    logits: np.ndarray  # float32 [rows, C]
    log_norm: np.ndarray  # float64 [rows]
    top_ids: np.ndarray  # int64 [rows]
    seconds: float  # the knock-out calls' time (the plain run not counted)
    plain_seconds: float  # the plain run's


class Knockout:
    """Knock-out rows over an OnnxDecoder's session (not thread-safe: the decoder's thread only)."""

    def __init__(self, decoder, max_tokens: int = MAX_TOKENS, max_rows: int = MAX_ROWS):
        if not decoder.io.in_place:
            raise ValueError(
                f"{decoder.model_dir.name} cannot hide a position from later ones only: its graph has no per-row "
                "attention mask (the prepared graph's fused attention); prepare the model with Branchpoint"
            )
        self.decoder = decoder
        self.max_tokens = max_tokens
        self.max_rows = max_rows

    def run(
        self,
        token_ids: Sequence[int],
        hidden: Sequence[Sequence[int]],
        candidate_ids: Sequence[int],
        progress: KnockoutProgress | None = None,
    ) -> KnockoutRows:
        """Row r hides the positions hidden[r] (each in [0, T-1): the last position has no later one) of
        token_ids (T tokens) from every later position. KnockoutCancelled when progress says stop."""
        import time

        ids = np.asarray(token_ids, dtype=np.int64)
        sets = [np.unique(np.asarray(h, dtype=np.int64)) for h in hidden]
        self._check(ids, sets, candidate_ids)
        candidates = np.asarray(candidate_ids, dtype=np.int64)
        started = time.perf_counter()
        base_kv, base = self._plain(ids)
        plain_seconds = time.perf_counter() - started
        logits = np.empty((len(sets), len(candidates)), np.float32)
        log_norm = np.empty(len(sets), np.float64)
        top_ids = np.empty(len(sets), np.int64)
        order = sorted(range(len(sets)), key=lambda r: -int(sets[r][0]))
        started = time.perf_counter()
        done = 0
        _report(progress, 0, len(sets))
        for batch in self._batches(order, sets, len(ids)):
            start = int(min(sets[r][0] for r in batch)) + 1
            row_logits = self._knocked_out(base_kv, ids, start, [sets[r] for r in batch])
            logits[batch] = row_logits[:, candidates]
            log_norm[batch] = _log_norm(row_logits)
            top_ids[batch] = row_logits.argmax(axis=1)
            done += len(batch)
            _report(progress, done, len(sets))
        return KnockoutRows(base[candidates], float(_log_norm(base[None])[0]), int(base.argmax()), logits, log_norm,
                            top_ids, time.perf_counter() - started, plain_seconds)

    def _check(self, ids: np.ndarray, sets: list[np.ndarray], candidate_ids: Sequence[int]) -> None:
        vocab = self.decoder.vocab_size
        if ids.ndim != 1 or len(ids) < 2:
            raise ValueError(f"token_ids must hold at least 2 tokens (a position and a later one), got {len(ids)}")
        if ids.min() < 0 or ids.max() >= vocab:
            raise ValueError(f"token ids must be in [0, {vocab}), got {ids.min()}..{ids.max()}")
        self.decoder._check_positions(len(ids))
        for row, positions in enumerate(sets):
            if positions.size == 0 or positions[0] < 0 or positions[-1] >= len(ids) - 1:
                raise ValueError(f"hidden[{row}] must name positions in [0, {len(ids) - 1}) (the last position "
                                 f"has no later one), got {positions.tolist()}")
        if not candidate_ids or min(candidate_ids) < 0 or max(candidate_ids) >= vocab:
            raise ValueError(f"candidate ids must be in [0, {vocab}), got {list(candidate_ids)}")

    def _batches(self, order: list[int], sets: list[np.ndarray], length: int):
        """Rows in `order` (latest first) packed into calls of at most max_rows rows and max_tokens new positions
        (a row alone always goes)."""
        batch: list[int] = []
        for row in order:
            width = length - int(min(sets[r][0] for r in [*batch, row])) - 1
            if batch and (len(batch) >= self.max_rows or (len(batch) + 1) * width > self.max_tokens):
                yield batch
                batch = []
            batch.append(row)
        if batch:
            yield batch

    def _plain(self, ids: np.ndarray) -> tuple[list[ort.OrtValue], np.ndarray]:
        """The plain run's keys and values (one row, capacity T: every position written) and its last logits."""
        decoder, length = self.decoder, len(ids)
        placement = decoder.placement
        shape = [1, decoder.io.kv_heads, length, decoder.io.head_dim]
        dtype = helper.tensor_dtype_to_np_dtype(decoder.io.kv_elem_type)
        # zeros, each its own (on the CPU an OrtValue shares the array): no NaN behind a mask before it is written
        tensors = [ort.OrtValue.ortvalue_from_numpy(np.zeros(shape, dtype), placement.device, placement.device_id)
                   for _ in decoder.io.past_names]
        logits = None
        for start in range(0, length, PLAIN_CHUNK):
            piece = ids[start : start + PLAIN_CHUNK][None]
            mask = causal_mask(start, piece.shape[1], length)[None, None]
            logits = decoder.run_masked(tensors, piece, start, mask)
        return tensors, logits[0]

    def _knocked_out(self, base_kv: list[ort.OrtValue], ids: np.ndarray, start: int,
                     sets: list[np.ndarray]) -> np.ndarray:
        """Logits [rows, vocab] of rows that recompute positions start..T-1, row r hiding sets[r]."""
        length = len(ids)
        count = length - start
        tensors = self.decoder.row_gather(base_kv, np.zeros(len(sets), dtype=np.int64))
        mask = np.repeat(causal_mask(start, count, length)[None], len(sets), axis=0)
        queries = start + np.arange(count)
        for row, positions in enumerate(sets):
            mask[row][:, positions] &= ~(positions[None, :] < queries[:, None])
        piece = np.repeat(ids[start:][None], len(sets), axis=0)
        return self.decoder.run_masked(tensors, piece, start, mask[:, None])


def causal_mask(start: int, count: int, capacity: int) -> np.ndarray:
    """bool [count, capacity]: the query at position start + q reads keys 0..start + q."""
    return np.arange(capacity)[None, :] <= (start + np.arange(count))[:, None]


def _log_norm(logits: np.ndarray) -> np.ndarray:
    """log Σ exp(logits) per row, in float64."""
    peak = logits.max(axis=1, keepdims=True).astype(np.float64)
    return (peak + np.log(np.exp(logits - peak).sum(axis=1, keepdims=True)))[:, 0]


def _report(progress: KnockoutProgress | None, done: int, total: int) -> None:
    if progress is not None and progress(done, total):
        raise KnockoutCancelled(f"stopped after {done} of {total} knock-out rows")
