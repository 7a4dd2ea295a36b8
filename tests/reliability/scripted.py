"""A LogitsSource whose greedy choice follows a fixed script of token ids, for checks that need to know the text a
lane will generate (stop strings over real tokens, runs of a given length)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tests.fake_source import FakeSource


class ScriptedSource(FakeSource):
    """Row logits put 10 on the script's next token (by the row's length past the prompt) and 0 elsewhere."""

    def __init__(self, prompt_len: int, script: Sequence[int], vocab_size: int) -> None:
        super().__init__(vocab_size=vocab_size)
        self.prompt_len = prompt_len
        self.script = list(script)

    def logits_for(self, history: Sequence[int]) -> np.ndarray:
        logits = np.zeros(self.vocab_size, dtype=np.float32)
        position = (len(history) - self.prompt_len) % len(self.script)
        logits[self.script[position]] = 10.0
        return logits
