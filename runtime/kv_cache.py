"""The KV cache: every row's past keys and values as OrtValues on the session's device, with its own length and
attention mask.

Layout. A cache of `rows` sequences holds the graph's past inputs in order (key then value of each layer), each
[rows, kv_heads, P, head_dim] on the device ("cuda" or "cpu" OrtValues: CPU and CUDA run this same code, so the
CPU tests exercise what the GPU runs). All rows share the physical length P. Each row has its own attention mask
over the P positions (1 = part of its sequence, 0 = a hole left by a truncation) and its own length = the number
of ones in its mask = the position id of its next token. So rows of different lengths batch in one call.

Operations (each returns a new cache; a cache is never modified, so an old one stays valid):

- `select_rows(rows)`: new row i continues old row rows[i]: fork (repeat a row), reorder, drop (omit a row).
  One run of a tiny Gather graph on the device (`RowGather`); nothing at all when the selection is the identity.
- `truncate(lengths)`: row i keeps its first lengths[i] tokens; its mask is zeroed beyond them (the keys and
  values stay where they are, masked out).
- `grow(presents, attention_mask)`: the cache after a model run that appended tokens: the run's presents
  [rows, kv_heads, P + S, head_dim] and the mask it ran with (`attention_mask(S)`: this mask plus S columns of
  ones); every length grows by S.

- In place (a graph from `runtime.in_place_kv`): the tensors are buffers of `capacity` >= P positions and a run
  writes its S new positions into them at P (no copy of the cache per step). `writable(S)` is the cache a run
  continues: itself, or a copy when the buffer is too short (grown with `kv_spare` positions to spare) or when a
  newer cache has already written past P into the shared buffer (copy on write: a cache's own positions are
  never overwritten, so an old cache stays valid here too). `run_masks(S)` gives the run's write index and
  boolean attention mask over the capacity; `grown_in_place(S)` the cache after it.

- `extend(ids, run, chunk, progress)`: a long input (a prompt) appended in chunks of at most `chunk` tokens, one
  model run each: attention costs chunk × context instead of S × S, a run's memory is bounded by the chunk, and
  progress is reported (and a stop honoured) between chunks.

A model run reads `attention_mask(S)` and `position_ids(S)` of the cache it continues. Compared with
onnxruntime-genai's `KeyValueCache`, `Update(beam_indices, total_length)` is `select_rows` + `grow`, and
`RewindTo(index)` (which copies the tensors shorter, for every row alike) is `truncate`, per row, by the mask.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import onnxruntime as ort

from decoding.engine.protocol import PrefillCancelled, PrefillProgress
from runtime.helper_graphs import row_gather_model
from runtime.session import Placement, create_helper_session

PREFILL_CHUNK = 256  # tokens per run of a long input (bench "prefill chunk"): see KVCache.extend
KV_SPARE_MIN = 32  # the fewest positions an in-place buffer gets beyond what it needs (see kv_spare)


def kv_spare(needed: int) -> int:
    """Positions an in-place buffer of `needed` positions gets to spare when it is (re)allocated: 2·sqrt(needed),
    at least KV_SPARE_MIN. Attention reads the whole buffer, so a spare position costs every step until it is used
    (~5.5 µs a row on the default model, all layers); growing copies the cache (~1.5 ms + ~9 µs a position a row).
    Their sum per step is least near sqrt(2 × copy / read) spare positions, about 2·sqrt(needed) here. Measured
    against a fixed 256 (context 50, interleaved): a step 0.94x (ggml) to 0.96x (fp32) on one row, 0.90x on 8."""
    return max(KV_SPARE_MIN, 2 * math.isqrt(needed))


class RowGather:
    """The row Gather helper graph on the model's device: one run takes the same rows of every KV tensor (and,
    for an in-place buffer that grows, zero-pads them). Not thread-safe (one IO binding per graph, reused): use
    it from one thread at a time."""

    def __init__(self, num_tensors: int, elem_type: int, placement: Placement):
        self.num_tensors = num_tensors
        self.elem_type = elem_type
        self.placement = placement
        self._graphs: dict[tuple[bool, bool], tuple[ort.InferenceSession, ort.IOBinding]] = {}

    def graph(self, gather: bool, padded: bool) -> tuple[ort.InferenceSession, ort.IOBinding]:
        """The helper graph that gathers and/or pads, made on first use (only in-place buffers are padded)."""
        if (gather, padded) not in self._graphs:
            model = row_gather_model(self.num_tensors, self.elem_type, gather, padded)
            session = create_helper_session(model, self.placement)
            self._graphs[gather, padded] = session, session.io_binding()
        return self._graphs[gather, padded]

    def __call__(self, tensors: Sequence[ort.OrtValue], rows: np.ndarray | None, extra: int = 0) -> list[ort.OrtValue]:
        """tensors[j][rows] for every j (rows None: all, as they are), as new OrtValues on the device, with
        `extra` zero positions appended on the sequence axis. `rows`: int64 [N], already checked."""
        session, binding = self.graph(rows is not None, extra > 0)
        if extra:
            binding.bind_cpu_input("pads", np.array([0, 0, 0, 0, 0, 0, extra, 0], dtype=np.int64))
        if rows is not None:
            binding.bind_cpu_input("indices", rows)
        device = self.placement
        for j, value in enumerate(tensors):
            binding.bind_ortvalue_input(f"kv_{j}", value)
            binding.bind_output(f"out_{j}", device.device, device.device_id)
        session.run_with_iobinding(binding)
        outputs = binding.get_outputs()
        binding.clear_binding_inputs()
        binding.clear_binding_outputs()
        return outputs


@dataclass
class WriteMark:
    """Positions written into an in-place buffer by the newest cache over it. A cache over the same buffer with
    fewer positions is an older one: it copies the buffer before it writes (see KVCache.writable)."""

    length: int


@dataclass(frozen=True, eq=False)
class KVCache:
    """See the module docstring. `tensors`: the graph's past inputs in order, each [rows, kv_heads, P, head_dim]
    on the device; `mask`: int [rows, P] in the graph's attention-mask type; `lengths`: int64 [rows]. Never
    modified in place: the arrays may be shared with the cache this one was made from."""

    tensors: list[ort.OrtValue]
    mask: np.ndarray
    lengths: np.ndarray
    gather: RowGather
    written: WriteMark | None = None  # in place: the buffer's write mark; None: runs return new presents

    @classmethod
    def empty(
        cls, gather: RowGather, kv_heads: int, head_dim: int, mask_dtype: type, in_place: bool = False
    ) -> KVCache:
        """One row of length 0 (P = 0, no capacity yet): what a prefill continues."""
        device = gather.placement
        shape = [1, kv_heads, 0, head_dim]
        tensors = [
            ort.OrtValue.ortvalue_from_shape_and_type(shape, gather.elem_type, device.device, device.device_id)
            for _ in range(gather.num_tensors)
        ]
        mark = WriteMark(0) if in_place else None
        return cls(tensors, np.zeros((1, 0), dtype=mask_dtype), np.zeros(1, dtype=np.int64), gather, mark)

    @property
    def in_place(self) -> bool:
        return self.written is not None

    @property
    def capacity(self) -> int:
        """Positions the tensors hold: P, or an in-place buffer's size."""
        return int(self.tensors[0].shape()[2])

    @property
    def num_rows(self) -> int:
        return int(self.lengths.shape[0])

    @property
    def physical_length(self) -> int:
        """P: the positions every row's tensors hold, masked or not."""
        return int(self.mask.shape[1])

    def select_rows(self, rows: Sequence[int] | np.ndarray) -> KVCache:
        """New row i continues old row rows[i] (fork, reorder, drop). The identity selection returns this cache."""
        index = np.asarray(rows, dtype=np.int64)
        if index.ndim != 1 or index.shape[0] == 0:
            raise ValueError(f"rows must be a non-empty 1-D sequence, got {index.tolist()}")
        if index.min() < 0 or index.max() >= self.num_rows:
            raise ValueError(f"rows must be in [0, {self.num_rows}), got {index.tolist()}")
        if index.shape[0] == self.num_rows and bool(np.all(index == np.arange(self.num_rows))):
            return self
        mark = WriteMark(self.physical_length) if self.in_place else None
        return KVCache(self.gather(self.tensors, index), self.mask[index], self.lengths[index], self.gather, mark)

    def truncate(self, lengths: Sequence[int | None] | np.ndarray) -> KVCache:
        """Row i keeps its first lengths[i] tokens (None: all of them): its mask is zeroed beyond them."""
        if len(lengths) != self.num_rows:
            raise ValueError(f"lengths must have one entry per row ({self.num_rows}), got {len(lengths)}")
        mask, kept = self.mask, self.lengths
        for i, keep in enumerate(lengths):
            if keep is None:
                continue
            if not 0 <= keep <= kept[i]:
                raise ValueError(f"lengths[{i}] must be in [0, {kept[i]}] (row {i}'s length), got {keep}")
            if keep == kept[i]:
                continue
            if mask is self.mask:
                mask, kept = mask.copy(), kept.copy()
            mask[i, np.flatnonzero(mask[i])[keep:]] = 0
            kept[i] = keep
        return self if mask is self.mask else KVCache(self.tensors, mask, kept, self.gather, self.written)

    def attention_mask(self, new_tokens: int = 1) -> np.ndarray:
        """The mask of a run that appends `new_tokens` to every row: [rows, P + new_tokens]."""
        past = self.physical_length
        mask = np.empty((self.num_rows, past + new_tokens), dtype=self.mask.dtype)
        mask[:, :past] = self.mask
        mask[:, past:] = 1
        return mask

    def position_ids(self, new_tokens: int = 1) -> np.ndarray:
        """int64 [rows, new_tokens]: each row's next positions, counted from its own length."""
        return self.lengths[:, None] + np.arange(new_tokens, dtype=np.int64)

    def grow(self, presents: Sequence[ort.OrtValue], attention_mask: np.ndarray) -> KVCache:
        """The cache after a run that appended S tokens to every row, from the run's presents (each
        [rows, kv_heads, P + S, head_dim], in the order of `tensors`) and the mask it ran with
        (`attention_mask(S)`)."""
        added = attention_mask.shape[1] - self.physical_length
        if attention_mask.shape[0] != self.num_rows or added < 1:
            raise ValueError(
                f"attention_mask must be [{self.num_rows}, {self.physical_length} + S] with S >= 1, "
                f"got {list(attention_mask.shape)}"
            )
        if len(presents) != len(self.tensors):
            raise ValueError(f"presents must have one tensor per past input ({len(self.tensors)}), got {len(presents)}")
        return KVCache(list(presents), attention_mask, self.lengths + added, self.gather)

    def writable(self, new_tokens: int, spare: int | None = None) -> KVCache:
        """In place: the cache a run writing `new_tokens` positions continues (see the module docstring); a buffer
        that must grow gets `spare` positions beyond them (default `kv_spare`)."""
        past, needed = self.physical_length, self.physical_length + new_tokens
        if needed > self.capacity:
            extra = needed + (kv_spare(needed) if spare is None else spare) - self.capacity
        elif self.written.length != past:
            extra = 0
        else:
            return self
        rows = None if extra else np.arange(self.num_rows, dtype=np.int64)  # the plain Gather copies
        return KVCache(self.gather(self.tensors, rows, extra), self.mask, self.lengths, self.gather, WriteMark(past))

    def run_masks(self, new_tokens: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """In place: a run's `kv_write_index` int64 [rows] (every row writes at P) and `kv_attention_mask` bool
        [rows, 1, S, capacity]: each row's own past positions, then the new ones causally."""
        past = self.physical_length
        mask = np.zeros((self.num_rows, 1, new_tokens, self.capacity), dtype=bool)
        mask[:, 0, :, :past] = self.mask[:, None, :] != 0
        mask[:, 0, :, past : past + new_tokens] = np.tri(new_tokens, dtype=bool)
        return np.full(self.num_rows, past, dtype=np.int64), mask

    def slot_positions(self, new_tokens: int = 1) -> np.ndarray:
        """In place: int64 [rows, capacity], the position of the token in each slot of a run appending
        `new_tokens` (a row's attended slots count its positions, as its mask does; unattended slots get a
        position no window reaches, and their keys are masked anyway)."""
        past = self.physical_length
        positions = np.full((self.num_rows, self.capacity), np.iinfo(np.int32).min, dtype=np.int64)
        positions[:, :past] = np.cumsum(self.mask != 0, axis=1) - 1
        positions[:, past : past + new_tokens] = self.position_ids(new_tokens)
        return positions

    def grown_in_place(self, new_tokens: int) -> KVCache:
        """In place: the cache after a run wrote `new_tokens` positions at P into its buffer."""
        self.written.length = self.physical_length + new_tokens
        return KVCache(self.tensors, self.attention_mask(new_tokens), self.lengths + new_tokens, self.gather,
                       self.written)

    def extend(
        self,
        ids: np.ndarray,
        run: Callable[[KVCache, np.ndarray], tuple[KVCache, np.ndarray]],
        chunk: int = PREFILL_CHUNK,
        progress: PrefillProgress | None = None,
    ) -> tuple[KVCache, np.ndarray]:
        """Append ids [rows, S] to every row in chunks of at most `chunk` tokens, each through `run(cache, piece)`
        (one model run: the grown cache and the logits of its last position). Returns the grown cache and the
        last chunk's logits. `progress(done, S)` is called before the first chunk and after each; when it returns
        True, PrefillCancelled is raised before the next chunk (this cache stays as it was: never modified)."""
        if chunk < 1:
            raise ValueError(f"chunk must be >= 1, got {chunk}")
        total = ids.shape[1]
        cache, logits = self, None
        _report(progress, 0, total)
        for start in range(0, total, chunk):
            piece = ids[:, start : start + chunk]
            if cache.in_place:  # grown exactly chunk by chunk (attention reads the whole buffer), spare at the end
                cache = cache.writable(piece.shape[1], None if start + chunk >= total else 0)
            cache, logits = run(cache, piece)
            _report(progress, min(start + chunk, total), total)
        return cache, logits


def _report(progress: PrefillProgress | None, done: int, total: int) -> None:
    if progress is not None and progress(done, total):
        raise PrefillCancelled(f"stopped after {done} of {total} tokens")
