"""The small protocol between the decoding engine and whatever produces logits.

`runtime.OnnxDecoder` implements it with ONNX Runtime; tests implement it with a pure-numpy fake. The engine never
sees a KV cache: it holds an opaque `state` of rows, asks for new rows built from old ones (fork, reorder, drop and
truncate are all one `rows` selection) and gets one logits row per new row back from ONE batched call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np


class LogitsSource(Protocol):
    vocab_size: int

    def prefill(self, prompt_ids: Sequence[int]) -> tuple[Any, np.ndarray]:
        """Run the prompt once. Returns (state with one row, float32 logits [vocab] of the last position)."""
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


class TokenText(Protocol):
    """What the engine needs of a tokenizer."""

    def piece(self, token_id: int) -> str:
        """Readable text of a single token (byte-level pieces decoded; partial UTF-8 shown as \\x.. escapes)."""
        ...

    def decode(self, token_ids: Sequence[int]) -> str:
        """Text of a whole sequence, without special tokens."""
        ...
