"""Run one lane of the real Engine over logits a test chooses, and read what it did as a test's oracle sees it:
the processed distribution over the whole vocabulary (from the step's top list, the engine's top_n set to the
vocabulary's size), the kept count, mirostat's mu, XTC's coin. Tests written against these see the samplers'
behaviour, not their classes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from decoding.chain.spec import LaneSpec
from decoding.engine.engine import Engine
from decoding.records.trace import LaneTrace, PromptInfo, StepRecord, TopList
from tests.fake_source import FakeSource, FakeTokenizer


class FunctionSource(FakeSource):
    """A LogitsSource whose row logits are `logits_of(history)` (prompt + tokens so far)."""

    def __init__(self, logits_of: Callable[[list[int]], np.ndarray], vocab_size: int) -> None:
        super().__init__(vocab_size=vocab_size)
        self._logits_of = logits_of

    def logits_for(self, history: Sequence[int]) -> np.ndarray:
        return np.asarray(self._logits_of(list(history)), dtype=np.float32)


class LetterTokenizer(FakeTokenizer):
    """Token i is one letter (a, b, c, ...), so DRY's breaker strings name tokens; it encodes text letter by
    letter (a TextEncoder: a breaker's rest becomes a tail of tokens, as llama.cpp tokenizes it)."""

    LETTERS = "abcdefghijklmnopqrstuvwxyz"

    def piece(self, token_id: int) -> str:
        return self.LETTERS[token_id] if token_id < len(self.LETTERS) else f"<{token_id}>"

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return [self.LETTERS.index(letter) for letter in text]


def run_lane(spec: LaneSpec, source: FakeSource, prompt_ids: Sequence[int], steps: int,
             tokenizer: FakeTokenizer | None = None, eos: Sequence[int] = ()) -> LaneTrace:
    """The lane's trace over `steps` steps (no eos unless given), every step's top list the whole vocabulary."""
    engine = Engine(source, tokenizer or FakeTokenizer(), eos_token_ids=list(eos), top_n=max(source.vocab_size, 20))
    return engine.run(PromptInfo("oracle", list(prompt_ids)), [spec], max_new_tokens=steps).lanes[0]


def first_step(spec: LaneSpec, history: Sequence[int], logits: np.ndarray,
               tokenizer: FakeTokenizer | None = None) -> StepRecord:
    """The record of the step after `history` (the prompt), the model's logits there being `logits`."""
    logits = np.asarray(logits, dtype=np.float32)
    return run_lane(spec, FunctionSource(lambda _: logits, logits.size), history, 1, tokenizer).steps[0]


def probs_of(top: TopList, vocab_size: int) -> np.ndarray:
    """A top list covering the vocabulary as a probability vector (ids it leaves out: 0)."""
    probs = np.zeros(vocab_size)
    probs[list(top.ids)] = top.probs
    return probs


def softmax(logits: np.ndarray) -> np.ndarray:
    """In float64, -inf entries 0."""
    wide = np.asarray(logits, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        weights = np.exp(wide - wide[np.isfinite(wide)].max())
    return weights / weights.sum()
