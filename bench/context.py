"""What every benchmark item shares: the model folder, the sizes (full or --quick), and lazily loaded pieces
(the ONNX decoder, the tokenizer, the prompt) so an item only pays for what it uses."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

import numpy as np

PROMPT = "Although I was tired, I still decided to"


@dataclass(frozen=True)
class Sizes:
    new_tokens: int = 64  # item 1 and 5: tokens per lane
    run_reps: int = 3  # item 1: interleaved repetitions of whole runs
    step_reps: int = 15  # items 2-4: timed steps per candidate
    prefill_reps: int = 3
    contexts: tuple[int, int] = (50, 1000)  # item 3: short and long context
    prefill_lengths: tuple[int, ...] = (50, 200, 500, 1000)
    bandwidth_mb: int = 512
    batch_rows: int = 8  # 5 lanes with a 4-beam lane = 8 rows
    agreement_prompts: int = 5  # precision options: greedy agreement with fp32
    gui_tokens: int = 64
    fanout_members: int = 32  # fan-out item: members of one sampled lane
    long_prompts: tuple[int, int, int] = (500, 1000, 4000)  # long-prompt item: per-token base, middle, long
    explain_tokens: int = 80  # explain item: the lane's tokens after the bench prompt
    knockout_context: int = 120  # knockout item: the context whose every position is knocked out
    text_set_chars: int | None = None  # llama_cpp item's scoreboard: the whole text set, or its first text cut


FULL = Sizes()
QUICK = Sizes(
    new_tokens=4,
    run_reps=1,
    step_reps=3,
    prefill_reps=1,
    contexts=(16, 64),
    prefill_lengths=(16, 64),
    bandwidth_mb=32,
    agreement_prompts=2,
    gui_tokens=6,
    fanout_members=4,
    long_prompts=(16, 32, 64),
    explain_tokens=8,
    knockout_context=16,
    text_set_chars=200,
)


def sizes_for(quick: bool, **overrides) -> Sizes:
    base = QUICK if quick else FULL
    return replace(base, **{k: v for k, v in overrides.items() if v is not None})


@dataclass
class BenchContext:
    model_dir: Path
    sizes: Sizes
    device: str = "cpu"
    threads: int | None = None

    @cached_property
    def decoder(self):
        """The warmed-up ONNX decoder (first runs of a fresh session are several times slower)."""
        return load_decoder(self.model_dir, self.device, self.threads)

    @cached_property
    def tokenizer(self):
        from runtime.tokenizer import Tokenizer

        return Tokenizer.from_model_dir(self.model_dir)

    @cached_property
    def prompt_ids(self) -> list[int]:
        return list(self.tokenizer.encode(PROMPT))

    def random_ids(self, length: int, seed: int = 0) -> list[int]:
        """A synthetic prompt of `length` ordinary tokens (timing does not depend on which tokens)."""
        rng = np.random.default_rng(seed)
        return rng.integers(3, self.decoder.vocab_size, size=length).tolist()


def load_decoder(model_dir: Path, device: str = "cpu", threads: int | None = None):
    from runtime.decoder import OnnxDecoder

    decoder = OnnxDecoder(model_dir, device=device, threads=threads)
    decoder.warmup()
    return decoder
