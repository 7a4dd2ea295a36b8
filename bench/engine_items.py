"""Items measured through the decoding engine: five lanes side by side vs transformers generate() run one
configuration after another (item 1), the share of step time spent in decoding/ (item 5), the same with a
llama.cpp-style lane (DRY + XTC + mirostat) added (item 5b), a 32-member seed fan-out vs its lane alone (item 7)
and the share of its step time spent in decoding/ (item 8)."""

from __future__ import annotations

import statistics
import time

import numpy as np

from bench.context import PROMPT, BenchContext, load_decoder
from bench.report import Row
from bench.timing import SESSION_SETTLE, interleaved, medians, paired_ratio
from decoding.engine.protocol import RowSummarizer


def five_lanes(new_tokens: int | None = None) -> list:
    """The default five lanes, seeded. With `new_tokens`, each is forced to generate exactly that many (eos
    suppressed until then, on both sides, so Branchpoint and transformers do the same amount of work)."""
    from decoding.chain.spec import assign_seeds, default_lanes

    specs = default_lanes()
    if new_tokens is not None:
        specs = [spec.with_changes(min_new_tokens=new_tokens) for spec in specs]
    return assign_seeds(specs, 0)


def run_engine(ctx: BenchContext, specs: list, new_tokens: int, source=None, batched_rows: bool = True):
    """One Branchpoint run (prefill included) of `specs` on the bench prompt. Returns the RunTrace.
    `batched_rows=False`: decoding/ decides lane by lane (the per-row reference path)."""
    from decoding.engine.engine import Engine
    from decoding.records.trace import PromptInfo

    source = source or ctx.decoder
    engine = Engine(source, ctx.tokenizer, eos_token_ids=ctx.decoder.eos_token_ids, batched_rows=batched_rows)
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
    """The same lanes as plain transformers generate() calls, one configuration after another, on `threads`
    torch threads."""

    def __init__(self, model, prompt_ids: list[int], specs: list, new_tokens: int, eos_id: int, threads: int):
        import torch

        self.torch = torch
        self.model = model
        self.threads = threads
        self.input_ids = torch.tensor([prompt_ids])
        self.jobs = [(spec.seed or 0, hf_generation_kwargs(spec, new_tokens, eos_id)) for spec in specs]

    def __call__(self) -> list:
        outputs = []
        self.torch.set_num_threads(self.threads)
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
    from tests.reference import load_reference_model  # a test helper: bench runs from the repository

    return load_reference_model(model_dir)


def measure_side_by_side(ctx: BenchContext) -> list[Row]:
    """Each side on its faster thread setting, chosen by a short interleaved probe run (torch with 2 threads
    beside other processes on 2 cores can be many times slower than with 1; likewise ORT)."""
    tokens, probe_tokens = ctx.sizes.new_tokens, max(2, ctx.sizes.new_tokens // 8)
    model, eos = load_torch_model(ctx.model_dir), ctx.decoder.eos_token_ids[0]
    torch_threads, torch_probe = _fastest(
        {n: TransformersRuns(model, ctx.prompt_ids, five_lanes(probe_tokens), probe_tokens, eos, n) for n in (1, 2)}
    )
    decoders = {"ORT default threads": ctx.decoder, "ORT 1 thread": load_decoder(ctx.model_dir, ctx.device, 1)}
    ort_setting, ort_probe = _fastest(
        {name: _engine_call(ctx, five_lanes(probe_tokens), probe_tokens, source) for name, source in decoders.items()}
    )
    source, specs = decoders[ort_setting], five_lanes(tokens)
    candidates = {
        "branchpoint": _engine_call(ctx, specs, tokens, source),
        "transformers": TransformersRuns(model, ctx.prompt_ids, specs, tokens, eos, torch_threads),
        "greedy_alone": _engine_call(ctx, specs[:1], tokens, source),
    }
    samples = interleaved(candidates, ctx.sizes.run_reps, warmup=0, settle=SESSION_SETTLE)
    seconds = medians(samples)
    item, lanes = "1 side by side", f"5 lanes x {tokens} tokens"
    settings = f"torch {torch_threads} thread(s), {ort_setting}"
    return [
        Row(
            item,
            f"transformers generate() x5 / Branchpoint ({lanes})",
            paired_ratio(samples, "transformers", "branchpoint"),
            goal=">= 4",
            note=settings,
        ),
        Row(
            item,
            "Branchpoint 5 lanes / Branchpoint greedy lane alone",
            paired_ratio(samples, "branchpoint", "greedy_alone"),
        ),
        Row(item, f"Branchpoint, {lanes}", seconds["branchpoint"], unit="s"),
        Row(item, f"transformers, {lanes} one after another", seconds["transformers"], unit="s"),
        Row(item, "Branchpoint, greedy lane alone", seconds["greedy_alone"], unit="s"),
        Row(item, f"probe ({probe_tokens} tokens): torch 2 threads / 1 thread", torch_probe[2] / torch_probe[1]),
        Row(
            item,
            f"probe ({probe_tokens} tokens): ORT 1 thread / default",
            ort_probe["ORT 1 thread"] / ort_probe["ORT default threads"],
        ),
    ]


def _engine_call(ctx: BenchContext, specs: list, tokens: int, source):
    return lambda: run_engine(ctx, specs, tokens, source)


def _fastest(candidates: dict) -> tuple:
    """(the key of the fastest candidate, median seconds of each), interleaved after one warm-up call each."""
    seconds = medians(interleaved(candidates, reps=1, warmup=1, settle=SESSION_SETTLE))
    return min(seconds, key=seconds.get), seconds


# ------------------------------------------------------------------------------------- 5. sampler overhead


class Clock:
    """Wall seconds and this thread's CPU seconds (the latter ignores time the OS gave other processes, so it
    stays meaningful on a loaded machine for single-threaded work like decoding/)."""

    def __init__(self):
        self.wall = 0.0
        self.cpu = 0.0

    def measure(self, fn, *args, **kwargs):
        wall, cpu = time.perf_counter(), time.thread_time()
        result = fn(*args, **kwargs)
        self.wall += time.perf_counter() - wall
        self.cpu += time.thread_time() - cpu
        return result


class TimedSource:
    """A LogitsSource wrapper adding up the time spent inside the source: the model, and apart from it the
    RowSummary (raw rows' statistics computed in the runtime) when the source makes one. The rest of an
    engine run's time is decoding/ work: processors, selection, statistics, trace building."""

    def __init__(self, source):
        self.source = source
        self.vocab_size = source.vocab_size
        self.prefill_clock = Clock()
        self.step_clock = Clock()
        self.summary_clock = Clock()
        if isinstance(source, RowSummarizer):
            self.summarize = self._summarize

    def _summarize(self, logits, top_k):
        return self.summary_clock.measure(self.source.summarize, logits, top_k)

    def prefill(self, prompt_ids, progress=None):
        return self.prefill_clock.measure(self.source.prefill, prompt_ids, progress)

    def step(self, state, rows, tokens, lengths=None):
        return self.step_clock.measure(self.source.step, state, rows, tokens, lengths)


class FreeLogits:
    """A LogitsSource that costs nothing: precomputed LM-like logits (Zipf-shaped over `vocab_size` tokens,
    entropy of a few nats, as a real model's), so the engine's own cost per step can be timed at the real
    vocabulary size with any model."""

    def __init__(self, vocab_size: int, variants: int = 8, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.vocab_size = vocab_size
        base = 11.0 - 2.0 * np.log(np.arange(1, vocab_size + 1))
        rows = [rng.permutation(base + rng.standard_normal(vocab_size)) for _ in range(variants)]
        self.rows = np.stack(rows).astype(np.float32)
        self.calls = 0

    def prefill(self, prompt_ids, progress=None):
        return 1, self.rows[0].copy()

    def step(self, state, rows, tokens, lengths=None):
        self.calls += 1
        picks = (np.arange(len(rows)) + self.calls) % len(self.rows)
        return len(rows), self.rows[picks]


def measure_sampler_overhead(ctx: BenchContext) -> list[Row]:
    """The default lanes as users run them (no forced length: min_new_tokens would add a processor). The goal
    row counts the runtime's row summary with decoding/: it is statistics work moved out of numpy, not model."""
    specs = five_lanes()
    run_engine(ctx, specs, 2)  # warm-up
    medians, lane_by_lane = _timed_runs(ctx, specs)
    overhead = medians["decoding"] + medians["summary"]
    item = "5 sampler"
    return [
        Row(
            item,
            "decoding/ + row summary share of step time (5 lanes)",
            100 * overhead / (overhead + medians["model"]),
            unit="%",
            goal="<= 5",
        ),
        Row(
            item,
            "decoding/ alone, share of step time",
            100 * medians["decoding"] / (medians["decoding"] + medians["model"]),
            unit="%",
        ),
        Row(item, "decoding/ time per step (5 lanes)", medians["decoding"], unit="ms"),
        Row(item, "decoding/ CPU time per step (5 lanes, thread time)", medians["decoding_cpu"], unit="ms"),
        Row(item, "decoding/ CPU time per step, lane by lane (per-row path) / batched rows", lane_by_lane),
        Row(item, "row summary (runtime) time per step", medians["summary"], unit="ms"),
        Row(item, "model time per step (8 rows)", medians["model"], unit="ms"),
        *(  # where the 5 lanes' time goes (each alone also pays the engine loop)
            Row(item, f"decoding/ CPU time per step, {spec.name} lane alone", _lane_alone_ms(ctx, spec), unit="ms")
            for spec in specs
        ),
        Row(
            item,
            f"decoding/ CPU time per step, free logits over {ctx.decoder.vocab_size:,} tokens (numpy statistics)",
            _engine_cpu_ms_per_step_free(ctx, specs, ctx.sizes.new_tokens),
            unit="ms",
        ),
    ]


def llama_lane():
    """A lane with llama.cpp's heavier samplers: DRY (a repeat scan of the history), XTC (its coin and a sort of
    the step's candidates) and mirostat 2 (a sort and its running mu); decided alone (its processors carry
    state), on the per-row path."""
    from decoding.chain.spec import LaneSpec

    return LaneSpec("dry xtc mirostat", do_sample=True, dry_multiplier=0.8, xtc_probability=0.5, xtc_threshold=0.1,
                    mirostat=2, mirostat_tau=5.0, seed=24)


def measure_llama_sampler_overhead(ctx: BenchContext) -> list[Row]:
    """Item 5 with a DRY + XTC + mirostat lane beside the five default lanes: decoding/'s share of the step, and
    what the lane adds to decoding/'s time per step (measured alone, and as the six lanes over the five, each
    pair of runs back to back)."""
    five, lane = five_lanes(), llama_lane()
    six = [*five, lane]
    run_engine(ctx, six, 2)  # warm-up (DRY's breakers over the vocabulary are found here)
    runs = {"five": [], "six": []}
    for rep in range(max(1, ctx.sizes.run_reps)):
        for name in ("five", "six") if rep % 2 == 0 else ("six", "five"):
            runs[name].append(_timed_run(ctx, six if name == "six" else five))
    med = {name: {key: statistics.median(run[key] for run in found) for key in found[0]}
           for name, found in runs.items()}
    item = "5b llama.cpp sampler"
    overhead = med["six"]["decoding"] + med["six"]["summary"]
    return [
        Row(item, "decoding/ + row summary share of step time (5 lanes + DRY, XTC, mirostat)",
            100 * overhead / (overhead + med["six"]["model"]), unit="%", goal="<= 12"),
        Row(item, "decoding/ alone, share of step time (6 lanes)",
            100 * med["six"]["decoding"] / (med["six"]["decoding"] + med["six"]["model"]), unit="%"),
        Row(item, "decoding/ CPU time per step, 6 lanes / 5 lanes", med["six"]["decoding_cpu"] / med["five"][
            "decoding_cpu"]),
        Row(item, "decoding/ CPU time per step (6 lanes, thread time)", med["six"]["decoding_cpu"], unit="ms"),
        Row(item, f"decoding/ CPU time per step, {lane.name} lane alone", _lane_alone_ms(ctx, lane), unit="ms"),
        Row(item, "model time per step (9 rows)", med["six"]["model"], unit="ms"),
    ]


def _timed_runs(ctx: BenchContext, specs: list) -> tuple[dict[str, float], float]:
    """Median milliseconds per step (as _timed_run) of run_reps runs of `specs`, and the median ratio of
    decoding/ CPU time deciding lane by lane to deciding batched, each pair of runs back to back (which one
    first alternates: the second of two runs measured faster)."""
    runs, ratios = [], []
    for rep in range(max(1, ctx.sizes.run_reps)):
        pair = {}
        for batched_rows in (True, False) if rep % 2 == 0 else (False, True):
            pair[batched_rows] = _timed_run(ctx, specs, batched_rows)
        runs.append(pair[True])
        ratios.append(pair[False]["decoding_cpu"] / pair[True]["decoding_cpu"])
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}, statistics.median(ratios)


def _lane_alone_ms(ctx: BenchContext, spec) -> float:
    return _timed_run(ctx, [spec])["decoding_cpu"]


def _timed_run(ctx: BenchContext, specs: list, batched_rows: bool = True) -> dict[str, float]:
    """Milliseconds per step of one run: decoding/ (wall and CPU), the runtime's row summary, the model."""
    timed, total = TimedSource(ctx.decoder), Clock()
    trace = total.measure(run_engine, ctx, specs, ctx.sizes.new_tokens, timed, batched_rows)
    per_step = 1e3 / max(trace.timing.steps, 1)
    clocks = (timed.prefill_clock, timed.step_clock, timed.summary_clock)
    return {
        "decoding": (total.wall - sum(c.wall for c in clocks)) * per_step,
        "decoding_cpu": (total.cpu - sum(c.cpu for c in clocks)) * per_step,
        "summary": timed.summary_clock.wall * per_step,
        "model": timed.step_clock.wall * per_step,
    }


def _engine_cpu_ms_per_step_free(ctx: BenchContext, specs: list, tokens: int) -> float:
    """Engine CPU milliseconds per step on free logits of the bench model's vocabulary size (its real pieces)."""
    from decoding.engine.engine import Engine
    from decoding.records.trace import PromptInfo

    source = TimedSource(FreeLogits(ctx.decoder.vocab_size))  # its row copies are the source's time, not decoding/'s
    engine = Engine(source, ctx.tokenizer, eos_token_ids=[2])
    clock = Clock()
    trace = clock.measure(engine.run, PromptInfo(PROMPT, [1, 2, 3]), specs, max_new_tokens=tokens)
    decoding_cpu = clock.cpu - source.prefill_clock.cpu - source.step_clock.cpu
    return 1e3 * decoding_cpu / max(trace.timing.steps, 1)


# ------------------------------------------------------------------------------------------- 7. seed fan-out


def measure_fanout(ctx: BenchContext) -> list[Row]:
    """A sampled lane (T 1.0) fanned out to 32 members vs the same lane alone, each generating exactly
    new_tokens tokens (eos suppressed until then), interleaved; then where a fan-out step's time goes."""
    from decoding.analysis.fanout import fan_out

    tokens, count = ctx.sizes.new_tokens, ctx.sizes.fanout_members
    lane = fanout_lane(tokens)
    members = fan_out(lane, count)
    candidates = {"fanout": _engine_call(ctx, members, tokens, ctx.decoder),
                  "alone": _engine_call(ctx, [lane], tokens, ctx.decoder)}
    samples = interleaved(candidates, ctx.sizes.run_reps, warmup=1)
    seconds = medians(samples)
    split = _timed_run(ctx, members)
    item, shape = "7 fan-out", f"{count} members x {tokens} tokens"
    return [
        Row(item, f"fan-out ({shape}) / the lane alone ({tokens} tokens)", paired_ratio(samples, "fanout", "alone"),
            goal="<= 4"),
        Row(item, f"fan-out, {shape}", seconds["fanout"], unit="s"),
        Row(item, "the lane alone", seconds["alone"], unit="s"),
        Row(item, f"model time per step ({count} rows)", split["model"], unit="ms"),
        Row(item, f"decoding/ time per step ({count} rows)", split["decoding"], unit="ms"),
        Row(item, f"row summary (runtime) time per step ({count} rows)", split["summary"], unit="ms"),
    ]


# ------------------------------------------------------------------------------ 8. fan-out sampler overhead


def fanout_lane(tokens: int):
    """The fan-out items' sampled lane, generating exactly `tokens` tokens (eos suppressed until then)."""
    from decoding.chain.spec import LaneSpec

    return LaneSpec("T 1.0", do_sample=True, temperature=1.0, seed=11, min_new_tokens=tokens)


def measure_fanout_sampler(ctx: BenchContext) -> list[Row]:
    """Item 5 for a 32-member fan-out: the share of a 32-row step spent in decoding/ plus the runtime's row
    summary, and decoding/'s CPU time deciding lane by lane vs batched, each pair of runs back to back."""
    from decoding.analysis.fanout import fan_out

    count = ctx.sizes.fanout_members
    members = fan_out(fanout_lane(ctx.sizes.new_tokens), count)
    run_engine(ctx, members, 2)  # warm-up
    medians, lane_by_lane = _timed_runs(ctx, members)
    overhead = medians["decoding"] + medians["summary"]
    item = "8 fan-out sampler"
    return [
        Row(item, f"decoding/ + row summary share of step time ({count} members)",
            100 * overhead / (overhead + medians["model"]), unit="%", goal="<= 10"),
        Row(item, f"decoding/ time per step ({count} rows)", medians["decoding"], unit="ms"),
        Row(item, f"decoding/ CPU time per step ({count} rows, thread time)", medians["decoding_cpu"], unit="ms"),
        Row(item, "decoding/ CPU time per step, lane by lane (per-row path) / batched rows", lane_by_lane),
        Row(item, f"row summary (runtime) time per step ({count} rows)", medians["summary"], unit="ms"),
        Row(item, f"model time per step ({count} rows)", medians["model"], unit="ms"),
    ]
