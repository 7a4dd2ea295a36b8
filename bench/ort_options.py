"""ONNX Runtime session options chosen by measurement: the default decoder against variants (one intra-op
thread; worker threads that do not spin after a run, leaving the cores to decoding/ between steps), each timed
on a single-row step and on a whole 5-lane engine run, interleaved."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from bench.context import BenchContext, load_decoder
from bench.decoder_items import Stepper
from bench.engine_items import five_lanes, run_engine
from bench.report import Row
from bench.timing import interleaved, paired_ratio

SPIN_KEYS = ("session.intra_op.allow_spinning", "session.inter_op.allow_spinning")


@contextmanager
def no_spinning() -> Iterator[None]:
    """Sessions created inside get allow_spinning=0 (runtime.session.session_options patched meanwhile)."""
    from runtime import session

    original = session.session_options

    def patched(threads=None):
        options = original(threads)
        for key in SPIN_KEYS:
            options.add_session_config_entry(key, "0")
        return options

    session.session_options = patched
    try:
        yield
    finally:
        session.session_options = original


def measure_ort_options(ctx: BenchContext) -> list[Row]:
    with no_spinning():
        quiet = load_decoder(ctx.model_dir, ctx.device, ctx.threads)
    one_thread = load_decoder(ctx.model_dir, ctx.device, 1)
    decoders = {"default": ctx.decoder, "no_spin": quiet, "one_thread": one_thread}
    ids = ctx.random_ids(50)
    steps = interleaved({name: Stepper(d, ids, 1) for name, d in decoders.items()}, ctx.sizes.step_reps)
    tokens = max(2, ctx.sizes.new_tokens // 4)
    specs = five_lanes()
    runs = interleaved(
        {name: _engine_run(ctx, d, specs, tokens) for name, d in decoders.items()}, ctx.sizes.run_reps
    )
    item = "ORT options"
    return [
        Row(item, "single-row step: no spinning / default", paired_ratio(steps, "no_spin", "default")),
        Row(
            item,
            f"5-lane run ({tokens} tokens): no spinning / default",
            paired_ratio(runs, "no_spin", "default"),
        ),
        Row(item, "single-row step: 1 thread / default", paired_ratio(steps, "one_thread", "default")),
        Row(
            item,
            f"5-lane run ({tokens} tokens): 1 thread / default",
            paired_ratio(runs, "one_thread", "default"),
        ),
    ]


def _engine_run(ctx: BenchContext, decoder, specs: list, tokens: int):
    return lambda: run_engine(ctx, specs, tokens, source=decoder)
