"""ONNX Runtime session options chosen by measurement: the default decoder against variants, each timed on a
single-row step and on a whole 5-lane engine run, interleaved. Variants: worker threads that spin between pieces of
work (ORT's own default; the decoder's CPU sessions do not, see runtime.session.CPU_SPINNING and the `busy` item);
ORT's dynamic work blocks for parallel loops; one intra-op thread.

And a control: the default once more, its session made after all the others. Two sessions of the same settings
in one process do not step alike here: the one made later took 0.90–0.96x the first one's time in every A/A
comparison (one or two threads, with or without a session made and dropped before them, whichever was stepped
first), so any ratio between sessions of one process carries that much of their order. The control's ratio is
this run's share of it: read the others against it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from bench.context import BenchContext, load_decoder
from bench.decoder_items import Stepper
from bench.engine_items import five_lanes, run_engine
from bench.report import Row
from bench.timing import SESSION_SETTLE, interleaved, paired_ratio

SPINNING = "session.intra_op.allow_spinning"
VARIANTS = {
    "spinning": {SPINNING: "1"},
    "dynamic block base 4": {"session.dynamic_block_base": "4"},
}
CONTROL = "default again, made last"  # the session-order control (see the module docstring)


@contextmanager
def config_entries(entries: dict[str, str]) -> Iterator[None]:
    """Sessions created inside get these session config entries (runtime.session.session_options patched)."""
    from runtime import session

    original = session.session_options

    def patched(threads=None, spinning=True):
        options = original(threads, entries[SPINNING] == "1" if SPINNING in entries else spinning)
        for key, value in entries.items():
            if key != SPINNING:
                options.add_session_config_entry(key, value)
        return options

    session.session_options = patched
    try:
        yield
    finally:
        session.session_options = original


def measure_ort_options(ctx: BenchContext) -> list[Row]:
    decoders = {"default": ctx.decoder}
    for name, entries in VARIANTS.items():
        with config_entries(entries):
            decoders[name] = load_decoder(ctx.model_dir, ctx.device, ctx.threads)
    decoders["1 thread"] = load_decoder(ctx.model_dir, ctx.device, 1)
    decoders[CONTROL] = load_decoder(ctx.model_dir, ctx.device, ctx.threads)
    ids = ctx.random_ids(50)
    steps = interleaved(
        {name: Stepper(d, ids, 1) for name, d in decoders.items()}, ctx.sizes.step_reps, settle=SESSION_SETTLE
    )
    tokens = max(2, ctx.sizes.new_tokens // 4)
    specs = five_lanes()
    runs = interleaved(
        {name: _engine_run(ctx, d, specs, tokens) for name, d in decoders.items()},
        ctx.sizes.run_reps,
        settle=SESSION_SETTLE,
    )
    rows = []
    for name in list(decoders)[1:]:
        rows.append(Row("ORT options", f"single-row step: {name} / default", paired_ratio(steps, name, "default")))
        rows.append(
            Row("ORT options", f"5-lane run ({tokens} tokens): {name} / default", paired_ratio(runs, name, "default"))
        )
    return rows


def _engine_run(ctx: BenchContext, decoder, specs: list, tokens: int):
    return lambda: run_engine(ctx, specs, tokens, source=decoder)
