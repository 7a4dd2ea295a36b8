"""Pure-numpy LogitsSources (one also makes the optional RowSummary) and a tokenizer for engine tests: a row's
logits are a deterministic function of its whole history (prompt + tokens), so forks, reorders, drops and
batching are checked for real, and every call is counted."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from decoding.engine.protocol import PrefillCancelled, RowSummary


class FakeSource:
    def __init__(self, vocab_size: int = 64, peak: float = 3.0, fail_at_step: int | None = None) -> None:
        self.vocab_size = vocab_size
        self.peak = peak
        self.fail_at_step = fail_at_step
        self.prefill_calls = 0
        self.step_calls = 0
        self.batch_sizes: list[int] = []

    def logits_for(self, history: Sequence[int]) -> np.ndarray:
        digest = hashlib.sha256(np.asarray(history, dtype=np.int64).tobytes()).digest()
        rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
        return (rng.standard_normal(self.vocab_size) * self.peak).astype(np.float32)

    def prefill(self, prompt_ids: Sequence[int], progress=None):
        """The whole prompt in one piece: progress hears 0 and all of it (and may stop before the piece)."""
        if progress is not None and progress(0, len(prompt_ids)):
            raise PrefillCancelled("stopped before the prompt")
        self.prefill_calls += 1
        if progress is not None:
            progress(len(prompt_ids), len(prompt_ids))
        state = [list(prompt_ids)]
        return state, self.logits_for(state[0])

    def step(self, state, rows, tokens, lengths=None):
        self.step_calls += 1
        if self.fail_at_step is not None and self.step_calls >= self.fail_at_step:
            raise RuntimeError("device lost")
        lengths = lengths or [None] * len(rows)
        new_state = []
        for row, token, length in zip(rows, tokens, lengths, strict=True):
            history = state[row] if length is None else state[row][:length]
            new_state.append(history + [int(token)])
        self.batch_sizes.append(len(rows))
        return new_state, np.stack([self.logits_for(h) for h in new_state])


class SummarizingSource(FakeSource):
    """FakeSource that also makes the optional RowSummary (in float64, as numpy_summary), counting calls."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.summaries: list[tuple[int, int]] = []

    def summarize(self, logits, top_k):
        self.summaries.append((logits.shape[0], top_k))
        return numpy_summary(logits, min(top_k, self.vocab_size))


def numpy_summary(logits: np.ndarray, top_k: int) -> RowSummary:
    """A RowSummary as a source would make it, in float64 (another computation than Softmax.of's)."""
    wide = logits.astype(np.float64)
    peak = wide.max(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        weights = np.exp(wide - peak)
        weighted_shift = (weights * (wide - peak)).sum(axis=1)
    top_ids = np.argsort(-logits, axis=1, kind="stable")[:, :top_k]
    return RowSummary(
        peak[:, 0].astype(np.float32), weights.astype(np.float32), weights.sum(axis=1), weighted_shift, top_ids
    )


class FakeTokenizer:
    def piece(self, token_id: int) -> str:
        return f"<{token_id}>"

    def decode(self, token_ids: Sequence[int]) -> str:
        return "".join(self.piece(t) for t in token_ids)


class OtherWeightsSource(FakeSource):
    """A FakeSource of other weights: the same history gives other logits (another model of one tokenizer)."""

    def __init__(self, salt: int = 1, **kwargs) -> None:
        super().__init__(**kwargs)
        self.salt = salt

    def logits_for(self, history: Sequence[int]) -> np.ndarray:
        return super().logits_for([-self.salt, *history])


class OtherFakeTokenizer:
    """A tokenizer other than FakeTokenizer: other pieces, and the prompt read with a start token 2 first."""

    def piece(self, token_id: int) -> str:
        return f"[{token_id}]"

    def decode(self, token_ids: Sequence[int]) -> str:
        return "".join(self.piece(t) for t in token_ids)

    def own(self, eos_token_ids: Sequence[int] = (3,)):
        """As a lane model brings it (decoding.engine.protocol.OwnTokenizer)."""
        from decoding.engine.protocol import OwnTokenizer

        return OwnTokenizer(self, lambda prompt: [2, *prompt.ids], tuple(eos_token_ids))


def fake_models(models: dict[str, FakeSource], precision: str = "int4", other_tokenizer: Sequence[str] = ()):
    """A decoding.engine.protocol.ModelResolver over named fake sources (LookupError naming them for another name); the
    models named in `other_tokenizer` bring an OtherFakeTokenizer."""
    from dataclasses import replace

    from decoding.engine.protocol import LaneModel
    from decoding.records.model_info import LaneModelInfo

    def resolve(name: str) -> LaneModel:
        if name not in models:
            raise LookupError(f"a prepared model (prepared: {', '.join(models)})")
        info = LaneModelInfo(name, {"model.onnx": f"{name}-hash"}, f"/models/{name}", precision=precision)
        if name in other_tokenizer:
            return LaneModel(models[name], replace(info, tokenizer=f"{name}-tokenizer"), OtherFakeTokenizer().own())
        return LaneModel(models[name], info)

    return resolve
