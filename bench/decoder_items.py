"""Items measured on the ONNX decoder alone (no decoding strategies): batching gain, KV-cache flatness,
prefill scaling, and the memory-bandwidth floor."""

from __future__ import annotations

import statistics
from pathlib import Path

from bench.bandwidth import readers, weight_bytes
from bench.context import BenchContext
from bench.report import Row, SkipItem
from bench.timing import SESSION_SETTLE, elapsed, interleaved, median_time, medians, paired_ratio

NEXT_TOKEN = 42  # any ordinary token: step time does not depend on it


class Stepper:
    """Keeps a decoder state and advances all its rows by one token per call (the context grows by one each
    call, negligible against the prompt). `permute` reverses the rows each call, forcing the row gather a beam
    reorder costs."""

    def __init__(self, decoder, prompt_ids: list[int], rows: int, permute: bool = False):
        self.decoder = decoder
        state, _ = decoder.prefill(prompt_ids)
        self.state, _ = decoder.step(state, [0] * rows, [NEXT_TOKEN] * rows)
        order = range(rows - 1, -1, -1) if permute else range(rows)
        self.rows = list(order)
        self.tokens = [NEXT_TOKEN] * rows

    def __call__(self) -> None:
        self.state, _ = self.decoder.step(self.state, self.rows, self.tokens)


class OneByOne:
    """The same rows as separate one-row states, stepped one call each (what a per-lane loop would do)."""

    def __init__(self, decoder, prompt_ids: list[int], rows: int):
        self.steppers = [Stepper(decoder, prompt_ids, 1) for _ in range(rows)]

    def __call__(self) -> None:
        for stepper in self.steppers:
            stepper()


def measure_batching(ctx: BenchContext) -> list[Row]:
    decoder, ids, rows, reps = ctx.decoder, ctx.random_ids(50), ctx.sizes.batch_rows, ctx.sizes.step_reps
    samples = interleaved(
        {
            "single": Stepper(decoder, ids, 1),
            "batch": Stepper(decoder, ids, rows),
            "reordered": Stepper(decoder, ids, rows, permute=True),
            "one_by_one": OneByOne(decoder, ids, rows),
        },
        reps,
    )
    ms = {name: value * 1e3 for name, value in medians(samples).items()}
    item = "2 batching"
    return [
        Row(
            item,
            f"batched step ({rows} rows) / single-row step",
            paired_ratio(samples, "batch", "single"),
            goal="<= 1.5",
        ),
        Row(item, f"{rows} one-by-one steps / one batched step", paired_ratio(samples, "one_by_one", "batch")),
        Row(
            item,
            "batched step with rows reordered (beam) / without",
            paired_ratio(samples, "reordered", "batch"),
        ),
        Row(item, "single-row step", ms["single"], unit="ms"),
        Row(item, f"batched step ({rows} rows)", ms["batch"], unit="ms"),
    ]


def measure_kv_flatness(ctx: BenchContext) -> list[Row]:
    short, long = ctx.sizes.contexts
    decoder = ctx.decoder
    samples = interleaved(
        {
            "short": Stepper(decoder, ctx.random_ids(short), 1),
            "long": Stepper(decoder, ctx.random_ids(long), 1),
        },
        ctx.sizes.step_reps,
    )
    ms = medians(samples)
    item = "3 KV cache"
    rows = [
        Row(
            item,
            f"step at context {long} / at context {short}",
            paired_ratio(samples, "long", "short"),
            goal="<= 1.6",
        ),
        Row(item, f"single-row step at context {short}", ms["short"] * 1e3, unit="ms"),
        Row(item, f"single-row step at context {long}", ms["long"] * 1e3, unit="ms"),
    ]
    return rows + measure_prefill(ctx)


def measure_prefill(ctx: BenchContext) -> list[Row]:
    lengths = ctx.sizes.prefill_lengths
    seconds = {
        n: median_time(lambda n=n: ctx.decoder.prefill(ctx.random_ids(n)), ctx.sizes.prefill_reps) for n in lengths
    }
    first = lengths[0]
    rows = [Row("3 prefill", f"prefill {n} tokens", seconds[n] * 1e3, unit="ms") for n in lengths]
    per_token = [seconds[n] / n / (seconds[first] / first) for n in lengths[1:]]
    rows += [
        Row("3 prefill", f"per-token time at {n} / at {first}", ratio)
        for n, ratio in zip(lengths[1:], per_token, strict=True)
    ]
    return rows


class StepAfterStep:
    """A single-row step timed right after an untimed one, as steps follow each other while decoding. (Right
    after a reader's 512 MiB scan, which leaves nothing of the step's small working set in any cache, a step
    measured 1.3x as long: 47 vs 35-37 ms.)"""

    def __init__(self, step: Stepper):
        self.step = step
        self.seconds: list[float] = []

    def __call__(self) -> None:
        self.step()
        self.seconds.append(elapsed(self.step))


def measure_floor(ctx: BenchContext) -> list[Row]:
    """Single-row steps and full reads of a large array, interleaved round by round: each round's floor is
    weight bytes / that round's fastest read, and the ratio is the median of the per-round step / floor."""
    weights = weight_bytes(ctx.model_dir / "model.onnx")
    step, reads = StepAfterStep(Stepper(ctx.decoder, ctx.random_ids(50), 1)), readers(ctx.sizes.bandwidth_mb)
    interleaved({"step": step, **reads}, ctx.sizes.step_reps, warmup=0)
    step_s = step.seconds
    for reader in reads.values():
        reader.close()
    read_s = {name: reader.best_seconds for name, reader in reads.items()}
    nbytes = reads["one thread"].data.nbytes
    floors = [weights * min(times) / nbytes for times in zip(*read_s.values(), strict=True)]
    bandwidth = {name: nbytes / min(times) for name, times in read_s.items()}
    item = "4 floor"
    rows = [
        Row(
            item,
            "single-row step / bandwidth floor",
            statistics.median(s / f for s, f in zip(step_s, floors, strict=True)),
            goal="<= 1.3",
        ),
        *(
            Row(item, f"read bandwidth, {name} (best of sum, max, dot)", value / 1e9, unit="GB/s")
            for name, value in bandwidth.items()
        ),
        Row(item, "weight bytes", weights / 1e6, unit="MB"),
        Row(item, "floor = weights / bandwidth (median round)", statistics.median(floors) * 1e3, unit="ms"),
        Row(item, "single-row step at context 50 (median round)", statistics.median(step_s) * 1e3, unit="ms"),
    ]
    return rows


def measure_prefill_edit(ctx: BenchContext) -> list[Row]:
    """Prefill of the current decoder vs the same model with lm_head applied to the last position only."""
    import tempfile

    import numpy as np

    from bench.context import load_decoder
    from models.graph_edits import edited_model_dir

    _skip_if_applied(ctx, "last_position_lm_head")
    with tempfile.TemporaryDirectory(prefix="bench-edit-") as tmp:
        edited_dir = edited_model_dir(ctx.model_dir, Path(tmp), ("last_position_lm_head",))
        edited = load_decoder(edited_dir, ctx.device, ctx.threads)
        rows = []
        for length in (ctx.sizes.prefill_lengths[0], ctx.sizes.prefill_lengths[-1]):
            ids = ctx.random_ids(length)
            samples = interleaved(
                {
                    "full": lambda ids=ids: ctx.decoder.prefill(ids),
                    "edited": lambda ids=ids: edited.prefill(ids),
                },
                ctx.sizes.prefill_reps,
                settle=SESSION_SETTLE,
            )
            diff = np.abs(ctx.decoder.prefill(ids)[1] - edited.prefill(ids)[1]).max()
            rows += [
                Row(
                    "3 prefill",
                    f"prefill {length}: full logits / last-position lm_head (graph edit)",
                    paired_ratio(samples, "full", "edited"),
                    note=f"max |diff| {diff:.1e}",
                )
            ]
    return rows


def measure_attention_edit(ctx: BenchContext) -> list[Row]:
    """Steps of the current decoder vs the same model with grouped-query attention reading the KV cache as it
    is (models/graph_edits.grouped_attention: no repeated KV heads copied every step)."""
    import tempfile

    from bench.context import load_decoder
    from models.graph_edits import edited_model_dir

    _skip_if_applied(ctx, "grouped_attention")
    short, long = ctx.sizes.contexts
    cases = [(1, short), (1, long), (ctx.sizes.batch_rows, short), (ctx.sizes.batch_rows, (short + long) // 2)]
    with tempfile.TemporaryDirectory(prefix="bench-gqa-") as tmp:
        edited_dir = edited_model_dir(ctx.model_dir, Path(tmp), ("grouped_attention",))
        edited = load_decoder(edited_dir, ctx.device, ctx.threads)
        rows = [
            Row(
                "3 KV cache",
                "grouped attention: max |logits diff| on a real sequence (24 steps, 3 rows)",
                _max_logits_diff(ctx, edited),
                unit="",
            )
        ]
        for batch, context in cases:
            ids = ctx.random_ids(context)
            steppers = {"current": Stepper(ctx.decoder, ids, batch), "grouped": Stepper(edited, ids, batch)}
            samples = interleaved(steppers, ctx.sizes.step_reps, settle=SESSION_SETTLE)
            rows.append(
                Row(
                    "3 KV cache",
                    f"step {batch} row(s) at context {context}: grouped attention / current",
                    paired_ratio(samples, "grouped", "current"),
                )
            )
    return rows


def _skip_if_applied(ctx: BenchContext, edit: str) -> None:
    """An edit item compares a model without the edit to the same model with it: nothing to compare once the
    prepared model has it (every model prepared since manifest schema 2, where the edit's pattern is found)."""
    from models.catalog import read_manifest

    if edit in (read_manifest(ctx.model_dir).get("graph_edits") or []):
        raise SkipItem(f"the model already has the {edit} edit (applied at prepare time); run on an unedited export")


def _max_logits_diff(ctx: BenchContext, other) -> float:
    import numpy as np

    (state_a, a), (state_b, b) = ctx.decoder.prefill(ctx.prompt_ids), other.prefill(ctx.prompt_ids)
    worst = float(np.abs(a - b).max())
    rows, tokens = [0, 0, 0], [int(a.argmax())] * 3
    for step in range(24):
        (state_a, a), (state_b, b) = ctx.decoder.step(state_a, rows, tokens), other.step(state_b, rows, tokens)
        worst = max(worst, float(np.abs(a - b).max()))
        tokens, rows = a.argmax(-1).tolist(), ([1, 0, 2] if step % 3 == 0 else [0, 1, 2])
    return worst
