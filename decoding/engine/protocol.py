"""The small protocol between the decoding engine and whatever produces logits.

`runtime.OnnxDecoder` implements it with ONNX Runtime; tests implement it with a pure-numpy fake. The engine never
sees a KV cache: it holds an opaque `state` of rows, asks for new rows built from old ones (fork, reorder, drop and
truncate are all one `rows` selection) and gets one logits row per new row back from ONE batched call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from decoding.records.model_info import LaneModelInfo


@dataclass(frozen=True)
class RowSummary:
    """Softmax pieces of every row of a logits batch [rows, vocab] of finite logits, computed by a source that
    has faster kernels than numpy (optional: see `RowSummarizer`). Row i's probabilities are
    weights[i] / total[i]; its entropy is log(total[i]) - weighted_shift[i] / total[i]."""

    peak: np.ndarray  # float32 [rows]: the largest logit
    weights: np.ndarray  # float32 [rows, vocab]: exp(logits - peak)
    total: np.ndarray  # float64 [rows]: the sum of the weights
    weighted_shift: np.ndarray  # float [rows]: sum(weights * (logits - peak)); nan if a logit is not finite
    top_ids: np.ndarray  # int64 [rows, k]: the k largest logits, largest first, equal ones lower id first


# Prefill progress: called with (prompt tokens read so far, prompt tokens in all), first with 0 done, then after
# every chunk the source reads; it returns True to stop the prefill (the source then raises PrefillCancelled at
# once, without reading the next chunk). Anything it raises goes through the source unchanged.
PrefillProgress = Callable[[int, int], bool]


class PrefillCancelled(Exception):
    """A prefill stopped because its progress callback asked to: nothing it computed is kept."""


class LogitsSource(Protocol):
    vocab_size: int

    def prefill(self, prompt_ids: Sequence[int], progress: PrefillProgress | None = None) -> tuple[Any, np.ndarray]:
        """Run the prompt (in chunks, as the source likes). Returns (state with one row, float32 logits [vocab] of
        the last position). `progress`: see PrefillProgress (a source that reads the prompt in one piece calls it
        with 0 and with the whole count)."""
        ...

    def step(
        self,
        state: Any,
        rows: Sequence[int],
        tokens: Sequence[int],
        lengths: Sequence[int | None] | None = None,
    ) -> tuple[Any, np.ndarray]:
        """Advance a batch in one call.

        New row i continues old row `rows[i]` (rows may repeat: fork; any order: reorder; omitted rows are dropped),
        first truncated to its first `lengths[i]` tokens when given (branching from an earlier step), then extended
        by `tokens[i]`. Returns (new state with len(rows) rows, float32 logits [len(rows), vocab]).
        The old state must not be used afterwards.
        """
        ...



@dataclass(frozen=True)
class OwnTokenizer:
    """A lane model's tokenizer when it is not the run's: its lanes read the prompt as `encode` gives it (the
    run's PromptInfo -> ids, a chat prompt through its own template), name their tokens and stop with it."""

    text: TokenText
    encode: Callable[[Any], list[int]]  # decoding.records.trace.PromptInfo -> the prompt's ids in this tokenizer
    eos_token_ids: tuple[int, ...]


@dataclass(frozen=True)
class LaneModel:
    """A model a lane names (LaneSpec.model), opened by the front end: the source its lanes advance on (its own
    session and KV rows) and the identity their traces record. `tokenizer`: its own when it differs from the
    run's (its `info.tokenizer` then names it); None: the run's, and the engine refuses another vocabulary size."""

    source: LogitsSource
    info: LaneModelInfo
    tokenizer: OwnTokenizer | None = None


# A model's name (or folder) -> its LaneModel, from the front end (decoding/ opens no model); raises LookupError
# with why it cannot (not prepared: the prepared ones; another tokenizer) and the engine names the lane.
ModelResolver = Callable[[str], LaneModel]


# Optional capabilities: a source that has one satisfies its protocol too, and the engine uses it.


@runtime_checkable
class RowSummarizer(Protocol):
    """A source that summarises logits rows with faster kernels than numpy: the engine then reads every raw
    row's statistics from its RowSummary instead of computing them."""

    def summarize(self, logits: np.ndarray, top_k: int) -> RowSummary:
        """Summary of logits [rows, vocab] with top_k = min(top_k, vocab) best ids per row."""
        ...


@runtime_checkable
class PositionLimit(Protocol):
    """A source with a limited number of positions: the engine refuses a run that needs more before the
    prefill (None: no limit is known)."""

    max_positions: int | None


@runtime_checkable
class PartialRows(Protocol):
    """A source that returns part of each distribution (a served model's top-N log-probabilities, the rest -inf):
    each record then says how much raw probability its step did not see (StepRecord.unseen_mass)."""

    def unseen_mass(self) -> np.ndarray:
        """float64 [rows]: per row of the logits the last prefill or step returned, the probability outside the
        returned tokens (0.0 when a row is complete)."""
        ...


@runtime_checkable
class InFlight(Protocol):
    """A source whose calls wait on something outside the process (a server): Stop cancels what is in flight, and
    the waiting call raises at once."""

    def cancel_in_flight(self) -> None:
        """Abort the requests in flight (from any thread); the call waiting on them raises."""
        ...


class TokenText(Protocol):
    """What the engine needs of a tokenizer."""

    def piece(self, token_id: int) -> str:
        """Readable text of a single token (byte-level pieces decoded; partial UTF-8 shown as \\x.. escapes)."""
        ...

    def decode(self, token_ids: Sequence[int]) -> str:
        """Text of a whole sequence, without special tokens."""
        ...


@runtime_checkable
class TextEncoder(Protocol):
    """A tokenizer that also encodes text (optional): DRY's sequence breakers then include the tokens a breaker's
    rest encodes to after a token that ends with its start, as llama.cpp's; without it, only the tokens whose
    text contains a breaker."""

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Ids of `text`, with the tokenizer's special tokens when `add_special_tokens`."""
        ...
