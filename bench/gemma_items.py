"""Large vocabularies stay fast: the issue's items on the catalog's gemma-3-270m (262,144 tokens, 5.3× SmolLM2's),
measured side by side in one run with the suite's own items over that model's context — 5 lanes × 64 tokens vs
transformers generate() ×5 (goal ≥ 4×), decoding/'s share of a 5-lane step (goal ≤ 12 %), the single-row step vs
its weights' bandwidth floor (goal ≤ 1.3×) — plus run-file bytes per lane-step and what preparing it took (from
its manifest). Skipped where gemma-3-270m is not prepared (`main.py prepare --catalog gemma-3-270m
--accept-license`)."""

from __future__ import annotations

import dataclasses

from bench.context import BenchContext
from bench.report import Row, SkipItem

MODEL = "gemma-3-270m"
GOALS = {  # the goals for gemma, by how the metric the shared items name begins; their other goals are the
    # default model's (decoding/ + row summary <= 5 %) and are not gemma's
    "transformers generate() x5 / Branchpoint": ">= 4",
    "decoding/ alone, share of step time": "<= 12",
    "single-row step / bandwidth floor": "<= 1.3",
}


def gemma_context(ctx: BenchContext) -> BenchContext:
    from models.catalog import catalog_entry

    folder = catalog_entry(MODEL).folder
    if not (folder / "model.onnx").is_file():
        raise SkipItem(f"{MODEL} is not prepared: python main.py prepare --catalog {MODEL} --accept-license")
    return BenchContext(model_dir=folder, sizes=ctx.sizes, device=ctx.device, threads=ctx.threads)


def measure_gemma(ctx: BenchContext) -> list[Row]:
    from bench.decoder_items import measure_floor
    from bench.engine_items import measure_sampler_overhead, measure_side_by_side

    gemma = gemma_context(ctx)
    rows = [*measure_side_by_side(gemma), *measure_sampler_overhead(gemma), *measure_floor(gemma)]
    rows = [relabel(row) for row in rows]
    return [*rows, run_file_bytes(gemma), *prepare_times(gemma)]


def relabel(row: Row) -> Row:
    goal = next((goal for start, goal in GOALS.items() if row.metric.startswith(start)), "")
    return dataclasses.replace(row, item=f"gemma: {row.item}", goal=goal)


def run_file_bytes(ctx: BenchContext) -> Row:
    """Bytes of the saved run file per lane-step: 5 lanes × new_tokens, as the window and `run --json` save it."""
    from bench.engine_items import five_lanes, run_engine
    from decoding.records.jsonio import dumps

    tokens = ctx.sizes.new_tokens
    trace = run_engine(ctx, five_lanes(tokens), tokens)
    text = dumps(trace)
    steps = sum(len(lane.steps) for lane in trace.lanes)
    return Row("gemma: run file", "run-file bytes per lane-step (5 lanes)", len(text.encode("utf-8")) / steps,
               unit="B", note=f"{len(text) / 1e6:.1f} MB for {steps} lane-steps")


def prepare_times(ctx: BenchContext) -> list[Row]:
    from models.catalog import read_manifest

    seconds = read_manifest(ctx.model_dir).get("prepare_seconds", {})
    if not seconds:
        return []
    rows = [Row("gemma: prepare", "prepare --catalog gemma-3-270m, total", sum(seconds.values()), unit="s",
                note="as its manifest recorded it (not re-run here)")]
    slowest = sorted(seconds.items(), key=lambda item: -item[1])[:3]
    rows += [Row("gemma: prepare", f"stage {stage}", value, unit="s") for stage, value in slowest]
    return rows
