"""Long prompts: the chunked prefill against transformers' prefill of the same tokens, how prefill time per token
grows with the prompt, a step at a long context, the peak memory of a long prefill, and explaining a lane (the
inspection model's one call) against one plain forward pass over the same tokens."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from bench.context import BenchContext
from bench.decoder_items import Stepper
from bench.engine_items import load_torch_model
from bench.report import Row, SkipItem
from bench.timing import SESSION_SETTLE, elapsed, interleaved, medians, paired_ratio

ITEM = "9 long prompts"
ROOT = Path(__file__).resolve().parent.parent


class TorchPrefill:
    """transformers' prefill of a prompt: one forward over all its tokens, the KV cache built, logits of the last
    position only (`logits_to_keep=1`), sdpa attention, on `threads` torch threads."""

    def __init__(self, model, ids: list[int], threads: int):
        import torch

        self.torch, self.model, self.threads = torch, model, threads
        self.ids = torch.tensor([ids])

    def __call__(self) -> None:
        self.torch.set_num_threads(self.threads)
        with self.torch.inference_mode():
            self.model(self.ids, use_cache=True, logits_to_keep=1)


class PrefillOf:
    """The decoder's prefill of one prompt (in its chunks)."""

    def __init__(self, decoder, ids: list[int]):
        self.decoder, self.ids = decoder, ids

    def __call__(self) -> None:
        self.decoder.prefill(self.ids)


def measure_long_prompts(ctx: BenchContext) -> list[Row]:
    """Each long prefill interleaved with transformers' prefill of the same tokens and with the short prompt's
    prefill, so that both ratios pair calls made under the same load."""
    short, middle, long = ctx.sizes.long_prompts
    model = load_torch_model(ctx.model_dir)
    model.config._attn_implementation = "sdpa"
    threads = os.cpu_count() or 1
    rows = []
    for n in (middle, long):
        samples = interleaved(
            {
                "branchpoint": PrefillOf(ctx.decoder, ctx.random_ids(n)),
                "transformers": TorchPrefill(model, ctx.random_ids(n), threads),
                "short": PrefillOf(ctx.decoder, ctx.random_ids(short)),
            },
            ctx.sizes.prefill_reps,
            settle=SESSION_SETTLE,
        )
        seconds = medians(samples)
        goal = "<= 0.5" if n == long else "<= 0.6"
        ratio = paired_ratio(samples, "branchpoint", "transformers")
        rows += [
            Row(ITEM, f"prefill {n} tokens / transformers' prefill of them", ratio, goal=goal),
            Row(ITEM, f"prefill {n} tokens", seconds["branchpoint"], unit="s"),
            Row(ITEM, f"transformers' prefill of {n} tokens", seconds["transformers"], unit="s"),
        ]
    per_token = paired_ratio(samples, "branchpoint", "short") * short / long
    rows.append(Row(ITEM, f"prefill time per token at {long} / at {short}", per_token, goal="<= 2"))
    rows.append(Row(ITEM, f"prefill {short} tokens", seconds["short"], unit="s"))
    del model
    return rows + _long_step(ctx, long) + _prefill_memory(ctx, middle, long)


def _long_step(ctx: BenchContext, long: int) -> list[Row]:
    """A step at a long and a short context; then (where the graph writes its KV cache in place) the long one
    against the same graph as exported, which copies the whole cache every step (Concat). Two rounds: a second
    session's worker threads spin after its runs and would slow the first pair's."""
    short = ctx.sizes.contexts[0]
    long_stepper = Stepper(ctx.decoder, ctx.random_ids(long), 1)
    samples = interleaved({"short": Stepper(ctx.decoder, ctx.random_ids(short), 1), "long": long_stepper},
                          ctx.sizes.step_reps)
    ms = medians(samples)
    rows = [
        Row(ITEM, f"step at context {long} / at context {short}", paired_ratio(samples, "long", "short"),
            goal="<= 1.6"),
        Row(ITEM, f"single-row step at context {long}", ms["long"] * 1e3, unit="ms"),
        Row(ITEM, f"single-row step at context {short}", ms["short"] * 1e3, unit="ms"),
    ]
    if ctx.decoder.io.in_place:
        from runtime.decoder import OnnxDecoder

        exported = OnnxDecoder(ctx.model_dir, ctx.device, ctx.threads, in_place=False)
        exported.warmup()
        pair = interleaved({"long": long_stepper, "exported": Stepper(exported, ctx.random_ids(long), 1)},
                           ctx.sizes.step_reps)
        rows.append(Row(ITEM, f"step at context {long}: KV cache in place / as exported (Concat)",
                        paired_ratio(pair, "long", "exported")))
    return rows


class PeakRss:
    """The process's largest resident set while a call runs, sampled every few milliseconds (Linux /proc)."""

    def __init__(self, interval: float = 0.002):
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()

    @staticmethod
    def now() -> int:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def during(self, fn) -> int:
        """Peak resident bytes above the resident set before the call (what the call held at most)."""
        before = self.now()
        self.peak, self._stop = before, threading.Event()
        watcher = threading.Thread(target=self._watch)
        watcher.start()
        try:
            fn()
        finally:
            self._stop.set()
            watcher.join()
        return self.peak - before

    def _watch(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self.now())


def prefill_peak(model_dir: str, tokens: int, chunk: int) -> int:
    """In this (fresh) process: the decoder loaded and warmed up, then the peak bytes a prefill of `tokens` held
    above that (ORT's arena keeps what a process once allocated, so each measurement needs its own process)."""
    from bench.context import load_decoder

    decoder = load_decoder(Path(model_dir))
    decoder.chunk = chunk
    ids = np.random.default_rng(0).integers(3, decoder.vocab_size, size=tokens).tolist()
    return PeakRss().during(lambda: decoder.prefill(ids))


def _peak_in_fresh_process(ctx: BenchContext, tokens: int, chunk: int) -> int:
    call = f"prefill_peak({str(ctx.model_dir)!r}, {tokens}, {chunk})"
    code = f"from bench.long_prompt_items import prefill_peak; print({call})"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1])


def _prefill_memory(ctx: BenchContext, middle: int, long: int) -> list[Row]:
    if not Path("/proc/self/statm").is_file():
        raise SkipItem("peak memory needs Linux /proc")
    decoder = ctx.decoder
    chunk = decoder.chunk
    held = {n: _peak_in_fresh_process(ctx, n, chunk) for n in (middle, long)}
    whole = _peak_in_fresh_process(ctx, long, long)
    kv_bytes = len(decoder.io.past_names) * decoder.io.kv_heads * decoder.io.head_dim * 4 * long  # float32
    return [
        Row(ITEM, f"peak memory of a {long}-token prefill in chunks of {chunk}", held[long] / 2**20, unit="MB",
            note=f"above the loaded model; its KV cache alone is {kv_bytes / 2**20:.0f} MB"),
        Row(ITEM, f"peak memory of a {long}-token prefill in one run", whole / 2**20, unit="MB"),
        Row(ITEM, f"peak memory in chunks at {long} tokens / at {middle}", held[long] / max(held[middle], 1),
            note=f"{long / middle:.0f} if it grows with the tokens, {(long / middle) ** 2:.0f} with their square"),
    ]


def measure_explain(ctx: BenchContext) -> list[Row]:
    """Explaining an 80-token lane (after the bench prompt) as the window does, against one plain forward of the
    decoding model over the same tokens, side by side: the inspection model's one call and the logit lens of the
    position the lens view shows; also with every position's lens (what saving the explanation reads), and
    opening the inspection model (once per model) with the first call."""
    from models.inspection import Explainer, inspection_is_prepared

    if not inspection_is_prepared(ctx.model_dir):
        raise SkipItem("the inspection model is not prepared (run `main.py explain` once)")
    ids = ctx.prompt_ids + ctx.random_ids(ctx.sizes.explain_tokens)
    prompt_length, n = len(ctx.prompt_ids), len(ids)
    started = time.perf_counter()
    explainer = Explainer(ctx.model_dir, device=ctx.device)
    opened = time.perf_counter() - started
    first = elapsed(lambda: _explain_shown(explainer, ids, prompt_length))
    samples = interleaved(
        {
            "explain": lambda: _explain_shown(explainer, ids, prompt_length),
            "every position": lambda: explainer.explain(ids, prompt_length).lens_ids,
            "forward": lambda: ctx.decoder.prefill(ids),
        },
        ctx.sizes.prefill_reps,
        settle=SESSION_SETTLE,
    )
    forward = medians(samples)["forward"]
    phases = _explain_phases(explainer, ids, prompt_length)
    return [
        Row(ITEM, f"explain of {n} tokens / one plain forward over them", paired_ratio(samples, "explain", "forward"),
            goal="<= 3", note="the call and the logit lens of the one position the lens view shows"),
        Row(ITEM, f"explain of {n} tokens with every position's lens / one plain forward",
            paired_ratio(samples, "every position", "forward"), note="what saving the explanation reads"),
        Row(ITEM, f"opening the inspection model and the first explain of {n} tokens / one plain forward",
            (opened + first) / forward, note="once per model; the window keeps it open"),
        Row(ITEM, f"explain of {n} tokens: opening the inspection model", opened, unit="s"),
        Row(ITEM, f"explain of {n} tokens: one plain forward", forward, unit="s"),
        *(Row(ITEM, f"explain of {n} tokens: {phase}", seconds, unit="s") for phase, seconds in phases.items()),
    ]


def _explain_shown(explainer, ids: list[int], prompt_length: int) -> None:
    explainer.explain(ids, prompt_length).lens_column(len(ids) - 1)


def _explain_phases(explainer, ids: list[int], prompt_length: int) -> dict[str, float]:
    from decoding.records.explain import LogitLens, build_explain
    from models.inspection import LENS_TOP_K

    inspector = explainer.inspector
    arrays = []
    run = elapsed(lambda: arrays.append(inspector.run(ids)))
    hidden = arrays[0].hidden
    column = elapsed(lambda: inspector.lens(hidden[:, -1]))
    whole = elapsed(lambda: inspector.lens(hidden))
    lens = LogitLens.of_hidden(hidden, inspector.lens, explainer.tokenizer.piece, LENS_TOP_K)
    build = elapsed(lambda: build_explain(ids, prompt_length, arrays[0].attentions, lens, explainer.tokenizer,
                                          explainer.identity, inspector.provider))
    return {"inspection model run": run, "logit lens of one position": column,
            "logit lens of every position": whole, "building the result (tokens)": build}
