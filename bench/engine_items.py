"""Items measured through the decoding engine: five lanes side by side vs transformers generate() run one
configuration after another (item 1), and the share of step time spent in decoding/ (item 5)."""

from __future__ import annotations

import time

import numpy as np

from bench.context import PROMPT, BenchContext
from bench.report import Row
from bench.timing import interleaved, medians, paired_ratio


def five_lanes(new_tokens: int | None = None) -> list:
    """The default five lanes, seeded. With `new_tokens`, each is forced to generate exactly that many (eos
    suppressed until then, on both sides, so Branchpoint and transformers do the same amount of work)."""
    from decoding.spec import assign_seeds, default_lanes

    specs = default_lanes()
    if new_tokens is not None:
        specs = [spec.with_changes(min_new_tokens=new_tokens) for spec in specs]
    return assign_seeds(specs, 0)


def run_engine(ctx: BenchContext, specs: list, new_tokens: int, source=None):
    """One Branchpoint run (prefill included) of `specs` on the bench prompt. Returns the RunTrace."""
    from decoding.engine import Engine
    from decoding.trace import PromptInfo

    source = source or ctx.decoder
    engine = Engine(source, ctx.tokenizer, eos_token_ids=ctx.decoder.eos_token_ids)
    return engine.run(PromptInfo(PROMPT, ctx.prompt_ids), specs, max_new_tokens=new_tokens)


# ------------------------------------------------------------------------------------------ 1. side by side


def hf_generation_kwargs(spec, new_tokens: int, eos_id: int) -> dict:
    """transformers generate() arguments meaning exactly what a Branchpoint lane means (transformers' hidden
    sampling default top_k=50 switched off where the lane does not set top_k)."""
    kwargs = {
        "max_new_tokens": new_tokens,
        "min_new_tokens": new_tokens,
        "do_sample": spec.do_sample,
        "num_beams": spec.num_beams,
        "pad_token_id": eos_id,
        "eos_token_id": eos_id,
    }
    if spec.do_sample:
        kwargs.update(temperature=spec.temperature or 1.0, top_k=spec.top_k or 0, top_p=spec.top_p or 1.0)
    if spec.is_beam:
        kwargs.update(
            length_penalty=spec.length_penalty,
            early_stopping=spec.early_stopping,
            num_return_sequences=spec.num_return_sequences,
        )
    return kwargs


class TransformersRuns:
    """The same lanes as plain transformers generate() calls, one configuration after another."""

    def __init__(self, model_dir, prompt_ids: list[int], specs: list, new_tokens: int, eos_id: int):
        import torch

        self.torch = torch
        self.model = load_torch_model(model_dir)
        self.input_ids = torch.tensor([prompt_ids])
        self.jobs = [(spec.seed or 0, hf_generation_kwargs(spec, new_tokens, eos_id)) for spec in specs]

    def __call__(self) -> list:
        outputs = []
        with self.torch.inference_mode():
            for seed, kwargs in self.jobs:
                self.torch.manual_seed(seed)
                attention = self.torch.ones_like(self.input_ids)
                outputs.append(self.model.generate(self.input_ids, attention_mask=attention, **kwargs))
        return outputs


def load_torch_model(model_dir):
    """The fp32 transformers model with the prepared model's weights (the tiny test model keeps its HF folder
    beside it and names it in its manifest)."""
    from models.catalog import read_manifest

    hf_dir = read_manifest(model_dir).get("hf_dir")
    if hf_dir:
        import torch
        from transformers import AutoModelForCausalLM

        return AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32).eval()
    from models.prepare import load_reference_model

    return load_reference_model(model_dir)


def measure_side_by_side(ctx: BenchContext) -> list[Row]:
    tokens = ctx.sizes.new_tokens
    specs = five_lanes(tokens)
    eos = ctx.decoder.eos_token_ids[0]
    hf = TransformersRuns(ctx.model_dir, ctx.prompt_ids, specs, tokens, eos)
    candidates = {
        "branchpoint": lambda: run_engine(ctx, specs, tokens),
        "transformers": hf,
        "greedy_alone": lambda: run_engine(ctx, specs[:1], tokens),
    }
    _warm_up(ctx, specs, hf)
    samples = interleaved(candidates, ctx.sizes.run_reps, warmup=0)
    seconds = medians(samples)
    item = "1 side by side"
    lanes = f"5 lanes x {tokens} tokens"
    return [
        Row(
            item,
            f"transformers generate() x5 / Branchpoint ({lanes})",
            paired_ratio(samples, "transformers", "branchpoint"),
            goal=">= 4",
        ),
        Row(
            item,
            "Branchpoint 5 lanes / Branchpoint greedy lane alone",
            paired_ratio(samples, "branchpoint", "greedy_alone"),
        ),
        Row(item, f"Branchpoint, {lanes}", seconds["branchpoint"], unit="s"),
        Row(item, f"transformers, {lanes} one after another", seconds["transformers"], unit="s"),
        Row(item, "Branchpoint, greedy lane alone", seconds["greedy_alone"], unit="s"),
    ]


def _warm_up(ctx: BenchContext, specs: list, hf: TransformersRuns) -> None:
    """Short runs of both sides first (first calls allocate and are slow), without paying for full runs."""
    run_engine(ctx, five_lanes(2), 2)
    saved = hf.jobs
    hf.jobs = [(seed, {**kwargs, "max_new_tokens": 2, "min_new_tokens": 2}) for seed, kwargs in saved]
    hf()
    hf.jobs = saved


# ------------------------------------------------------------------------------------- 5. sampler overhead


class TimedSource:
    """A LogitsSource wrapper adding up the seconds spent inside the source (the model), so the rest of an
    engine run's wall time is decoding/ work: processors, selection, statistics, trace building."""

    def __init__(self, source):
        self.source = source
        self.vocab_size = source.vocab_size
        self.prefill_s = 0.0
        self.step_s = 0.0

    def prefill(self, prompt_ids):
        start = time.perf_counter()
        result = self.source.prefill(prompt_ids)
        self.prefill_s += time.perf_counter() - start
        return result

    def step(self, state, rows, tokens, lengths=None):
        start = time.perf_counter()
        result = self.source.step(state, rows, tokens, lengths)
        self.step_s += time.perf_counter() - start
        return result


class FreeLogits:
    """A LogitsSource that costs nothing: precomputed peaked random logits over `vocab_size` tokens, so the
    engine's own cost per step can be timed at the real vocabulary size with any model."""

    def __init__(self, vocab_size: int, variants: int = 8, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.vocab_size = vocab_size
        self.rows = (rng.standard_normal((variants, vocab_size)) * 3.0).astype(np.float32)
        self.calls = 0

    def prefill(self, prompt_ids):
        return 1, self.rows[0].copy()

    def step(self, state, rows, tokens, lengths=None):
        self.calls += 1
        picks = (np.arange(len(rows)) + self.calls) % len(self.rows)
        return len(rows), self.rows[picks]


def measure_sampler_overhead(ctx: BenchContext) -> list[Row]:
    """The default lanes as users run them (no forced length: min_new_tokens would add a processor)."""
    tokens = ctx.sizes.new_tokens
    specs = five_lanes()
    run_engine(ctx, specs, 2)  # warm-up
    timed = TimedSource(ctx.decoder)
    start = time.perf_counter()
    trace = run_engine(ctx, specs, tokens, source=timed)
    total = time.perf_counter() - start
    decoding_s = total - timed.prefill_s - timed.step_s
    steps = max(trace.timing.steps, 1)
    free_ms = _engine_ms_per_step_free(ctx, specs, tokens)
    item = "5 sampler"
    return [
        Row(
            item,
            "decoding/ share of step time (5 lanes)",
            100 * decoding_s / (decoding_s + timed.step_s),
            unit="%",
            goal="<= 5",
        ),
        Row(item, "decoding/ time per step (5 lanes, this model)", 1e3 * decoding_s / steps, unit="ms"),
        Row(item, "model time per step (8 rows)", 1e3 * timed.step_s / steps, unit="ms"),
        Row(item, "decoding/ time per step (5 lanes, 49,152 vocab, free logits)", free_ms, unit="ms"),
    ]


def _engine_ms_per_step_free(ctx: BenchContext, specs: list, tokens: int, vocab: int = 49152) -> float:
    """Engine milliseconds per step on free logits of the default model's vocabulary size."""
    from decoding.engine import Engine
    from decoding.trace import PromptInfo

    source = FreeLogits(vocab)
    text = ctx.tokenizer if ctx.decoder.vocab_size == vocab else NumberedPieces()  # real pieces if it fits
    engine = Engine(source, text, eos_token_ids=[2])
    start = time.perf_counter()
    trace = engine.run(PromptInfo(PROMPT, [1, 2, 3]), specs, max_new_tokens=tokens)
    return 1e3 * (time.perf_counter() - start) / max(trace.timing.steps, 1)


class NumberedPieces:
    """TokenText for free logits: token i reads "<i>"."""

    def piece(self, token_id: int) -> str:
        return f"<{token_id}>"

    def decode(self, token_ids) -> str:
        return "".join(self.piece(t) for t in token_ids)
