"""Speed on a machine that is doing something else (issue 37): the single-row step and a long prefill with
ONNX Runtime's default threads (spinning), with `session.intra_op.allow_spinning=0` and on one thread, quiet and
beside one and two busy competitor processes (a pure-Python loop each, like a browser tab or an IDE indexing).
Within a load the settings are interleaved; rows give each time and its ratio to the same setting's quiet time.
Noisy by nature on a shared machine: run it quiet (the lead's final run)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from contextlib import contextmanager

from bench.context import BenchContext, load_decoder
from bench.decoder_items import Stepper
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


def settings_decoders(ctx: BenchContext) -> dict:
    decoders = {"default (spinning)": ctx.decoder}
    with config_entries(ORT_VARIANTS["no spinning"]):
        decoders["no spinning"] = load_decoder(ctx.model_dir, ctx.device, ctx.threads)
    decoders["1 thread"] = load_decoder(ctx.model_dir, ctx.device, 1)
    return decoders


def measure_busy(ctx: BenchContext) -> list[Row]:
    decoders = settings_decoders(ctx)
    short, long = ctx.random_ids(50), ctx.random_ids(min(LONG_PROMPT, max(ctx.sizes.prefill_lengths)))
    steps: dict[int, dict[str, float]] = {}
    prefills: dict[int, dict[str, float]] = {}
    for load in LOADS:
        with competitors(load):
            step_samples = interleaved({n: Stepper(d, short, 1) for n, d in decoders.items()}, ctx.sizes.step_reps,
                                       settle=SESSION_SETTLE)
            prefill_samples = interleaved({n: (lambda d=d: d.prefill(long)) for n, d in decoders.items()},
                                          ctx.sizes.prefill_reps, settle=SESSION_SETTLE)
        steps[load], prefills[load] = medians(step_samples), medians(prefill_samples)
    rows = []
    for load in LOADS:
        label = "quiet" if load == 0 else f"{load} busy process{'es' if load > 1 else ''}"
        for name in decoders:
            rows.append(Row(ITEM, f"{label}: single-row step, {name}", steps[load][name] * 1e3, unit="ms"))
            rows.append(Row(ITEM, f"{label}: {len(long)}-token prefill, {name}", prefills[load][name], unit="s"))
            if load:
                rows.append(Row(ITEM, f"{label}: step / quiet step, {name}", steps[load][name] / steps[0][name]))
    default = "default (spinning)"
    for name in list(decoders)[1:]:
        rows.append(Row(ITEM, f"quiet: step {name} / {default}", steps[0][name] / steps[0][default]))
    return rows
