"""Speed on a machine that is doing something else (issue 37): the single-row step (eight in a row, each with its
row summary, as decoding runs them) and a long prefill with the decoder's default threads (worker threads that sleep
when out of work, runtime.session.CPU_SPINNING), with ORT's spinning workers and on one thread, quiet and beside one
and two busy competitor processes (a pure-Python loop each, like a browser tab or an IDE indexing). Within a load the
settings are interleaved; rows give each time and its ratio to the same setting's quiet time. Noisy by nature on a
shared machine: run it quiet."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from contextlib import contextmanager

from bench.context import BenchContext, load_decoder
from bench.decoder_items import NEXT_TOKEN, Stepper
from bench.ort_options import VARIANTS as ORT_VARIANTS
from bench.ort_options import config_entries
from bench.report import Row
from bench.timing import SESSION_SETTLE, interleaved, medians

LOADS = (0, 1, 2)  # busy competitor processes
LONG_PROMPT = 1000  # tokens of the prefill measured under each load
ITEM = "busy machine"


def _spin() -> None:
    while True:
        pass


@contextmanager
def competitors(count: int) -> Iterator[None]:
    """`count` busy processes for the duration (each ended by its own handle afterwards)."""
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_spin, daemon=True) for _ in range(count)]
    for process in processes:
        process.start()
    try:
        yield
    finally:
        for process in processes:
            process.terminate()
            process.join(timeout=5)


DEFAULT = "default (no spinning)"
SUMMARY_TOP = 64  # best ids a row summary keeps (decoding's)
STEPS = 8  # steps in a row per sample: a lone step after a pause would hide what spinning does between steps


class Steps:
    """STEPS single-row steps in a row, each followed by its row summary."""

    def __init__(self, decoder, prompt_ids: list[int]):
        self.decoder, self.state = decoder, Stepper(decoder, prompt_ids, 1).state

    def __call__(self) -> None:
        for _ in range(STEPS):
            self.state, logits = self.decoder.step(self.state, [0], [NEXT_TOKEN])
            self.decoder.summarize(logits, SUMMARY_TOP)


def settings_decoders(ctx: BenchContext) -> dict:
    decoders = {DEFAULT: ctx.decoder}
    with config_entries(ORT_VARIANTS["spinning"]):
        decoders["spinning"] = load_decoder(ctx.model_dir, ctx.device, ctx.threads)
    decoders["1 thread"] = load_decoder(ctx.model_dir, ctx.device, 1)
    return decoders


def measure_busy(ctx: BenchContext) -> list[Row]:
    decoders = settings_decoders(ctx)
    short, long = ctx.random_ids(50), ctx.random_ids(min(LONG_PROMPT, max(ctx.sizes.prefill_lengths)))
    steps: dict[int, dict[str, float]] = {}
    prefills: dict[int, dict[str, float]] = {}
    for load in LOADS:
        with competitors(load):
            step_samples = interleaved({n: Steps(d, short) for n, d in decoders.items()}, ctx.sizes.step_reps,
                                       settle=SESSION_SETTLE)
            prefill_samples = interleaved({n: (lambda d=d: d.prefill(long)) for n, d in decoders.items()},
                                          ctx.sizes.prefill_reps, settle=SESSION_SETTLE)
        steps[load] = {name: value / STEPS for name, value in medians(step_samples).items()}
        prefills[load] = medians(prefill_samples)
    rows = []
    for load in LOADS:
        label = "quiet" if load == 0 else f"{load} busy process{'es' if load > 1 else ''}"
        for name in decoders:
            rows.append(Row(ITEM, f"{label}: single-row step, {name}", steps[load][name] * 1e3, unit="ms"))
            rows.append(Row(ITEM, f"{label}: {len(long)}-token prefill, {name}", prefills[load][name], unit="s"))
            if load:
                rows.append(Row(ITEM, f"{label}: step / quiet step, {name}", steps[load][name] / steps[0][name]))
    for name in list(decoders)[1:]:
        rows.append(Row(ITEM, f"quiet: step {name} / {DEFAULT}", steps[0][name] / steps[0][DEFAULT]))
    return rows
