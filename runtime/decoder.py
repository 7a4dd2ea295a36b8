"""`OnnxDecoder`: an optimum export (`text-generation-with-past`) behind the `LogitsSource` protocol.

This module does the session's IO (binding inputs and outputs), takes the logits out and summarises logits rows.
The state it hands the engine is a `runtime.kv_cache.KVCache` (rows of past keys and values as OrtValues on the
session's device, each row with its own mask and length; fork / reorder / drop / truncate are its operations),
fed back through IO binding every step; only the last position's logits come back to the host, as float32. CPU
and CUDA share this one code path. Not thread-safe: use one decoder from one thread at a time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import TensorProto

from decoding.engine.protocol import PrefillProgress, RowSummary
from runtime.helper_graphs import ONNX_TYPES, last_logits_model, row_summary_model, summary_parts
from runtime.in_place_kv import (
    ATTENTION_MASK,
    SLIDING_MASK,
    WINDOW_KEY,
    WRITE_INDEX,
    additive,
    in_place_graph,
    window_mask,
)
from runtime.kv_cache import PREFILL_CHUNK, KVCache, RowGather
from runtime.model_files import eos_ids_from, max_positions_from, read_json
from runtime.session import (
    ModelError,
    create_helper_session,
    create_session,
    cuda_unavailable_reason,
    ort_errors,
    ort_message,
)

PAST_NAME = re.compile(r"^past_key_values\.(\d+)\.(key|value)$")
INT_TYPES = {"tensor(int64)": np.int64, "tensor(int32)": np.int32}


@dataclass(frozen=True)
class GraphIO:
    """Names and types discovered from the exported graph."""

    past_names: tuple[str, ...]
    present_names: tuple[str, ...]
    has_position_ids: bool
    ids_dtype: type
    mask_dtype: type
    positions_dtype: type
    kv_elem_type: int
    logits_elem_type: int
    logits_last_position_only: bool  # logits [B, 1, V] however many tokens a run takes (the lm_head graph edit)
    kv_heads: int
    head_dim: int
    vocab_size: int | None
    in_place: bool  # the KV cache is written in place (runtime.in_place_kv), not grown by Concat
    additive_mask: bool  # in place, the attention mask is additive float32 (the CPU graph), else boolean
    sliding_window: int | None  # in place with sliding-window layers (Gemma 3): their window, in positions

    @classmethod
    def from_session(cls, session: ort.InferenceSession, config: dict) -> GraphIO:
        inputs = {i.name: i for i in session.get_inputs()}
        outputs = {o.name: o for o in session.get_outputs()}
        in_place = WRITE_INDEX in inputs and ATTENTION_MASK in inputs
        for required in ("input_ids",) if in_place else ("input_ids", "attention_mask"):
            if required not in inputs:
                raise ValueError(f"model has no `{required}` input; export it with task text-generation-with-past")
        past = sorted((n for n in inputs if PAST_NAME.match(n)), key=_layer_order)
        if not past or "logits" not in outputs:
            raise ValueError("model has no past_key_values inputs / logits output (not a with-past export)")
        present = tuple(n.replace("past_key_values.", "present.", 1) for n in past)
        missing = [n for n in present if n not in outputs]
        if missing:
            raise ValueError(f"model lacks present outputs for its past inputs: {missing[:4]}")
        kv = inputs[past[0]]
        kv_heads, head_dim = _kv_dims(kv.shape, config)
        logits_shape = outputs["logits"].shape
        vocab = logits_shape[-1]
        return cls(
            past_names=tuple(past),
            present_names=present,
            has_position_ids="position_ids" in inputs,
            ids_dtype=INT_TYPES[inputs["input_ids"].type],
            mask_dtype=np.int64 if in_place else INT_TYPES[inputs["attention_mask"].type],
            positions_dtype=INT_TYPES[inputs["position_ids"].type] if "position_ids" in inputs else np.int64,
            kv_elem_type=ONNX_TYPES[kv.type],
            logits_elem_type=ONNX_TYPES[outputs["logits"].type],
            logits_last_position_only=len(logits_shape) == 3 and logits_shape[1] == 1,
            kv_heads=kv_heads,
            head_dim=head_dim,
            vocab_size=vocab if isinstance(vocab, int) else config.get("vocab_size"),
            in_place=in_place,
            additive_mask=in_place and inputs[ATTENTION_MASK].type == "tensor(float)",
            sliding_window=_sliding_window(session) if in_place and SLIDING_MASK in inputs else None,
        )


def _sliding_window(session: ort.InferenceSession) -> int:
    window = session.get_modelmeta().custom_metadata_map.get(WINDOW_KEY)
    if window is None:
        raise ValueError(f"the graph reads `{SLIDING_MASK}` but records no `{WINDOW_KEY}`")
    return int(window)


def _layer_order(name: str) -> tuple[int, int]:
    layer, kind = PAST_NAME.match(name).groups()
    return int(layer), 0 if kind == "key" else 1


def _kv_dims(shape: Sequence, config: dict) -> tuple[int, int]:
    """(kv_heads, head_dim) from the past input's static dims, else from config.json."""
    heads, head_dim = shape[1], shape[3]
    if not isinstance(heads, int):
        heads = config.get("num_key_value_heads") or config.get("num_attention_heads") or config["n_head"]
    if not isinstance(head_dim, int):
        hidden = config.get("hidden_size") or config["n_embd"]
        head_dim = config.get("head_dim") or hidden // (config.get("num_attention_heads") or config["n_head"])
    return int(heads), int(head_dim)


class OnnxDecoder:
    """LogitsSource over an exported model folder (model.onnx + config.json). See the module docstring."""

    def __init__(
        self,
        model_dir: str | Path,
        device: str = "auto",
        threads: int | None = None,
        chunk: int = PREFILL_CHUNK,
        in_place: bool = True,
    ):
        """`chunk`: the most prompt tokens one prefill run reads (KVCache.extend). `in_place`: write the KV cache
        in place where the graph allows it (runtime.in_place_kv; False: as exported, for comparisons)."""
        self.model_dir = Path(model_dir)
        self.chunk = chunk
        config = read_json(self.model_dir / "config.json")
        self.session, self.placement = self._open(device, threads, in_place)
        try:
            self.io = GraphIO.from_session(self.session, config)
        except (KeyError, IndexError, TypeError) as exc:  # an input of another type or rank than an export's
            raise ModelError(f"{self.model_dir / 'model.onnx'} is not a text-generation-with-past export: its "
                             f"inputs and outputs do not match ({type(exc).__name__}: {exc})") from exc
        if self.io.vocab_size is None:
            raise ValueError("vocab size is neither in the graph nor in config.json")
        self.vocab_size: int = self.io.vocab_size
        self.eos_token_ids: tuple[int, ...] = eos_ids_from(self.model_dir)
        # Learned position tables (GPT-2) fail past their end; RoPE models degrade. Either way: refuse clearly.
        self.max_positions: int | None = max_positions_from(config)
        self.row_gather = RowGather(len(self.io.past_names), self.io.kv_elem_type, self.placement)
        self._last = create_helper_session(last_logits_model(self.io.logits_elem_type), self.placement)
        self._summary = create_helper_session(row_summary_model(), self.placement, parallel=True)
        self._main_binding = self.session.io_binding()
        self._last_binding = self._last.io_binding()
        self._summary_binding = self._summary.io_binding()
        self._empty_cache = KVCache.empty(
            self.row_gather, self.io.kv_heads, self.io.head_dim, self.io.mask_dtype, self.io.in_place
        )

    def _open(self, device: str, threads: int | None, in_place: bool):
        path = self.model_dir / "model.onnx"
        on_cpu = device == "cpu" or cuda_unavailable_reason() is not None  # the CPU kernel's edits, or not
        graph = in_place_graph(self.model_dir, cpu=on_cpu) if in_place and path.exists() else None
        if graph is None:
            return create_session(path, device, threads)
        return create_session(graph.SerializeToString(), device, threads, external_data_dir=self.model_dir)

    @property
    def provider(self) -> str:
        """The execution provider really active ("CUDAExecutionProvider" or "CPUExecutionProvider")."""
        return self.placement.provider

    @property
    def device(self) -> str:
        """ "cuda" or "cpu": where the KV cache lives."""
        return self.placement.device

    @staticmethod
    def num_rows(state: KVCache) -> int:
        return state.num_rows

    @staticmethod
    def row_lengths(state: KVCache) -> list[int]:
        """Tokens (prompt included) in each row's sequence."""
        return state.lengths.tolist()

    def prefill(
        self, prompt_ids: Sequence[int], progress: PrefillProgress | None = None
    ) -> tuple[KVCache, np.ndarray]:
        """The prompt read in chunks of `self.chunk` tokens (see LogitsSource.prefill for `progress`)."""
        ids = np.asarray(prompt_ids, dtype=self.io.ids_dtype).reshape(1, -1)
        if ids.shape[1] == 0:
            raise ValueError("prompt_ids must not be empty")
        self._check_tokens(ids)
        self._check_positions(ids.shape[1])
        cache, logits = self._empty_cache.extend(ids, self._run, self.chunk, progress)
        return cache, logits[0]

    def step(
        self,
        state: KVCache,
        rows: Sequence[int],
        tokens: Sequence[int],
        lengths: Sequence[int | None] | None = None,
    ) -> tuple[KVCache, np.ndarray]:
        cache = state.select_rows(rows)
        ids = np.asarray(tokens, dtype=self.io.ids_dtype).reshape(-1, 1)
        if ids.shape[0] != cache.num_rows:
            raise ValueError(f"tokens must have one id per row ({cache.num_rows}), got {ids.shape[0]}")
        self._check_tokens(ids)
        if lengths is not None:
            cache = cache.truncate(lengths)
        self._check_positions(int(cache.lengths.max()) + 1)
        return self._run(cache, ids)

    def summarize(self, logits: np.ndarray, top_k: int) -> RowSummary:
        """The RowSummary of float32 logits [rows, vocab] (their softmax pieces and top_k best ids per row),
        by a helper graph on the session's provider; only its chunk sums are added up here, in float64."""
        logits = np.ascontiguousarray(logits, dtype=np.float32)
        rows, vocab = logits.shape
        k = min(int(top_k), vocab)
        parts = summary_parts(vocab)
        out = {
            "peak": np.empty((rows, 1), np.float32),
            "weights": np.empty((rows, vocab), np.float32),
            "total_parts": np.empty((rows, parts), np.float32),
            "shift_parts": np.empty((rows, parts), np.float32),
            "top_ids": np.empty((rows, k), np.int64),
        }
        binding = self._summary_binding
        binding.bind_cpu_input("logits", logits)
        binding.bind_cpu_input("k", np.array([k], dtype=np.int64))
        binding.bind_cpu_input("chunks", np.array([rows, parts, vocab // parts], dtype=np.int64))
        for name, array in out.items():
            binding.bind_output(name, "cpu", 0, array.dtype, list(array.shape), array.ctypes.data)
        self._summary.run_with_iobinding(binding)
        binding.clear_binding_inputs()
        binding.clear_binding_outputs()
        return RowSummary(
            peak=out["peak"][:, 0],
            weights=out["weights"],
            total=out["total_parts"].sum(axis=1, dtype=np.float64),
            weighted_shift=out["shift_parts"].sum(axis=1, dtype=np.float64),
            top_ids=out["top_ids"],
        )

    def warmup(self) -> None:
        """One prefill, then one step that forks a row and truncates the fork: the first runs of a fresh session
        are several times slower. A graph that loads but does not run as an export should (other input shapes or
        meanings) raises ModelError here."""
        try:
            state, _ = self.prefill([0] * 4)
            self.step(state, [0, 0], [0, 0], [None, 2])
        except (RuntimeError, *ort_errors()) as exc:  # a run with IO binding raises RuntimeError
            raise ModelError(f"{self.model_dir / 'model.onnx'} does not run as a text-generation-with-past export: "
                             f"{ort_message(exc)}") from exc

    def run_masked(
        self, tensors: Sequence[ort.OrtValue], ids: np.ndarray, start: int, mask: np.ndarray
    ) -> np.ndarray:
        """One run of the in-place graph under a mask of the caller's: ids [rows, S] written into `tensors` (KV
        buffers [rows, kv_heads, capacity, head_dim] on the device, as KVCache holds them) at position `start`,
        at positions start..start+S-1, each query reading the keys `mask` (bool [rows, 1, S, capacity], True =
        attend) allows. float32 logits [rows, vocab] of the last position. runtime.knockout hides keys from
        later queries with it, which the export's 2D attention mask cannot express."""
        if not self.io.in_place:
            raise ValueError(f"{self.model_dir / 'model.onnx'} has no per-row attention mask input (the prepared "
                             "graph's fused attention); prepare the model with Branchpoint to use it")
        rows, count = ids.shape
        binding = self._main_binding
        binding.bind_cpu_input("input_ids", ids.astype(self.io.ids_dtype))
        positions = np.broadcast_to(start + np.arange(count), (rows, count))  # each row's tokens from `start`
        if self.io.has_position_ids:
            binding.bind_cpu_input("position_ids", np.ascontiguousarray(positions, dtype=self.io.positions_dtype))
        binding.bind_cpu_input(WRITE_INDEX, np.full(rows, start, dtype=np.int64))
        slots = np.broadcast_to(np.arange(mask.shape[-1]), (rows, mask.shape[-1]))  # slot j holds position j
        self._bind_masks(binding, mask, lambda: (positions, slots))
        host_logits = self._bind_logits(binding, ids.shape)  # first: outputs[0] below
        for past, present, value in zip(self.io.past_names, self.io.present_names, tensors, strict=True):
            binding.bind_ortvalue_input(past, value)
            binding.bind_ortvalue_output(present, value)
        self.session.run_with_iobinding(binding)
        logits = self._last_position_logits(binding.get_outputs()[0]) if host_logits is None else host_logits[:, 0]
        binding.clear_binding_inputs()
        binding.clear_binding_outputs()
        return logits

    # -- internals --

    def _check_tokens(self, ids: np.ndarray) -> None:
        if ids.size and (ids.min() < 0 or ids.max() >= self.vocab_size):
            raise ValueError(f"token ids must be in [0, {self.vocab_size}), got {ids.min()}..{ids.max()}")

    def _check_positions(self, longest: int) -> None:
        if self.max_positions and longest > self.max_positions:
            raise ValueError(f"sequence length {longest} exceeds the model's {self.max_positions} positions")

    def _run(self, cache: KVCache, ids: np.ndarray) -> tuple[KVCache, np.ndarray]:
        """One run appending ids [rows, S] to the cache's rows: the grown cache and float32 logits [rows, vocab]
        of the last position."""
        binding, count = self._main_binding, ids.shape[1]
        binding.bind_cpu_input("input_ids", ids)
        if self.io.has_position_ids:
            binding.bind_cpu_input("position_ids", cache.position_ids(count).astype(self.io.positions_dtype))
        host_logits = self._bind_logits(binding, ids.shape)
        cache, grow = self._bind_cache(binding, cache, count)
        self.session.run_with_iobinding(binding)
        # the outputs' OrtValues (0.2 ms for 61 of them) only when read: device logits, or a Concat-grown cache
        outputs = binding.get_outputs() if host_logits is None or not cache.in_place else None
        binding.clear_binding_inputs()
        binding.clear_binding_outputs()
        logits = host_logits[:, 0] if host_logits is not None else self._last_position_logits(outputs[0])
        return grow(outputs[1:] if outputs is not None else ()), logits

    def _bind_cache(self, binding, cache: KVCache, count: int):
        """Bind the cache's tensors and masks for a run appending `count` tokens. Returns the cache the run
        continues and how to make the grown cache from the run's presents. In place, each present is bound to
        its past buffer: ONNX Runtime's TensorScatter then writes into it without copying."""
        if cache.in_place:
            cache = cache.writable(count)
            write_index, mask = cache.run_masks(count)
            binding.bind_cpu_input(WRITE_INDEX, write_index)
            self._bind_masks(binding, mask, lambda: (cache.position_ids(count), cache.slot_positions(count)))
            for past, present, value in zip(self.io.past_names, self.io.present_names, cache.tensors, strict=True):
                binding.bind_ortvalue_input(past, value)
                binding.bind_ortvalue_output(present, value)
            return cache, lambda presents: cache.grown_in_place(count)
        device = self.placement
        mask = cache.attention_mask(count)
        binding.bind_cpu_input("attention_mask", mask)
        for name, value in zip(self.io.past_names, cache.tensors, strict=True):
            binding.bind_ortvalue_input(name, value)
        for name in self.io.present_names:
            binding.bind_output(name, device.device, device.device_id)
        return cache, lambda presents: cache.grow(presents, mask)

    def _bind_masks(self, binding, mask: np.ndarray, positions: Callable[[], tuple[np.ndarray, np.ndarray]]) -> None:
        """An in-place run's mask (bool [rows, 1, S, capacity]), and with sliding-window layers their mask made
        from it by the positions (query positions [rows, S], key slot positions [rows, capacity]), each in the
        graph's type."""
        def bind(name: str, value: np.ndarray) -> None:
            binding.bind_cpu_input(name, additive(value) if self.io.additive_mask else value)

        bind(ATTENTION_MASK, mask)
        if self.io.sliding_window is not None:
            bind(SLIDING_MASK, window_mask(mask, *positions(), self.io.sliding_window))

    def _bind_logits(self, binding, ids_shape: tuple[int, int]) -> np.ndarray | None:
        """float32 logits of one position [rows, 1, vocab] (a decode step's, or any run's when the graph keeps the
        last position only) go straight into a host array (ORT copies them off the device); a prefill's
        [1, S, vocab] stay on the device for the last-position helper graph. Returns the host array, or None."""
        rows, count = ids_shape
        one_position = count == 1 or self.io.logits_last_position_only
        if not one_position or self.io.logits_elem_type != TensorProto.FLOAT:
            binding.bind_output("logits", self.placement.device, self.placement.device_id)
            return None
        out = np.empty((rows, 1, self.vocab_size), dtype=np.float32)
        binding.bind_output("logits", "cpu", 0, np.float32, list(out.shape), out.ctypes.data)
        return out

    def _last_position_logits(self, logits: ort.OrtValue) -> np.ndarray:
        """float32 [rows, vocab] on the host, written by the helper graph straight into a fresh array."""
        out = np.empty((logits.shape()[0], self.vocab_size), dtype=np.float32)
        binding = self._last_binding
        binding.bind_ortvalue_input("logits", logits)
        binding.bind_output("last", "cpu", 0, np.float32, list(out.shape), out.ctypes.data)
        self._last.run_with_iobinding(binding)
        binding.clear_binding_inputs()
        binding.clear_binding_outputs()
        return out
