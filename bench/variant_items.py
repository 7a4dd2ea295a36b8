"""The default model's precision variants side by side (`main.py prepare --variant ...`): per variant the
single-row and 8-row step times, measured interleaved in one run with fp32's and with full reads of a large array
(the single-row step against the bandwidth floor of that variant's weight bytes), and what it costs in
distribution: teacher-forced KL(fp32 ‖ variant) and top-1 agreement along fp32's greedy continuations, and
llama-perplexity's scoreboard over the fixed text set (models.teacher_forced: mean / 99th-percentile KL, same
top token, RMS Δp, top-10 Jaccard)."""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np

from bench.bandwidth import _ONNX_ITEM_SIZE, readers
from bench.context import BenchContext, load_decoder
from bench.decoder_items import Stepper
from bench.precision import PROMPTS, greedy_ids
from bench.report import Row, SkipItem
from bench.timing import SESSION_SETTLE, interleaved, medians, paired_ratio

VARIANTS = ("fp16", "int8", "int4", "q4_1", "q8_0", "q4_0", "q4_1r", "gguf", "ggml")
FLOAT = 1


def runtime_weight_bytes(model_path: Path) -> int:
    """Bytes of the weights a decode step reads as ONNX Runtime runs the graph: like bench.bandwidth.weight_bytes
    (tables only looked up by Gather are left out), but an initializer read through a Cast to float (the fp16
    variant's weights) counts as the float32 tensor ORT folds it into when the session loads."""
    import onnx

    model = onnx.load(str(model_path), load_external_data=False)
    consumers: dict[str, list[tuple]] = {}
    for node in model.graph.node:
        for position, name in enumerate(node.input):
            consumers.setdefault(name, []).append((node, position))

    def lookup_only(name: str) -> bool:
        uses = consumers.get(name, [])
        return bool(uses) and all(n.op_type == "Gather" and p == 0 for n, p in uses)

    total = 0
    for tensor in model.graph.initializer:
        count = int(np.prod(tensor.dims, dtype=np.int64))
        uses = consumers.get(tensor.name, [])
        casts = [n for n, _ in uses if n.op_type == "Cast"]
        if casts and len(casts) == len(uses):
            to_float = all(a.i == FLOAT for n in casts for a in n.attribute if a.name == "to")
            if not all(lookup_only(n.output[0]) for n in casts):
                total += count * (4 if to_float else _ONNX_ITEM_SIZE.get(tensor.data_type, 4))
            continue
        if not lookup_only(tensor.name):
            total += count * _ONNX_ITEM_SIZE.get(tensor.data_type, 4)
    return total


def variant_folders(model_dir: Path, variants: tuple[str, ...] = VARIANTS) -> dict[str, Path]:
    """fp32 (the model itself) and each of `variants` that is prepared, by name."""
    from models.catalog import models_dir

    found = {"fp32": model_dir}
    for variant in variants:
        if variant == "fp32":
            continue
        folder = models_dir() / f"{model_dir.name}-{variant}"
        if (folder / "model.onnx").is_file():
            found[variant] = folder
    return found


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file() and p.name.startswith("model.onnx"))


def teacher_forced_cost(folders: dict[str, Path], prompts: list[list[int]], sequences: list[list[int]]) -> dict:
    """Per variant: mean and max KL(fp32 ‖ variant) and top-1 agreement over the given fp32 greedy continuations,
    every position read in one call per model (runtime.sequence_logits)."""
    from decoding.analysis.model_compare import summarize, teacher_forced
    from runtime.sequence_logits import SequenceScorer

    logits: dict[str, list[np.ndarray]] = {}
    for name, folder in folders.items():
        scorer = SequenceScorer(folder, "cpu")
        logits[name] = [
            scorer(ids + tokens)[len(ids) - 1 : len(ids) + len(tokens) - 1]
            for ids, tokens in zip(prompts, sequences, strict=True)
        ]
        del scorer
    cost = {}
    for name in folders:
        steps = [
            step
            for ref, other, tokens in zip(logits["fp32"], logits[name], sequences, strict=True)
            for step in teacher_forced(ref, other, tokens)
        ]
        cost[name] = summarize(steps)
    return cost


def text_set_scoreboards(folders: dict[str, Path]) -> dict[str, dict]:
    """Per variant, the text-set scoreboard against fp32 (fp32's logits read once and kept)."""
    from models.teacher_forced import compare_scorers, tokenizer_encoder
    from runtime.sequence_logits import SequenceScorer

    base = SequenceScorer(folders["fp32"], "cpu")
    kept: dict[tuple, np.ndarray] = {}

    def reference(ids: list[int]) -> np.ndarray:
        if tuple(ids) not in kept:
            kept[tuple(ids)] = base(ids)
        return kept[tuple(ids)]

    encode = tokenizer_encoder(folders["fp32"])
    return {name: compare_scorers(reference, SequenceScorer(folder, "cpu"), encode)
            for name, folder in folders.items() if name != "fp32"}


def measure_variants(ctx: BenchContext) -> list[Row]:
    folders = variant_folders(ctx.model_dir)
    if len(folders) == 1:
        raise SkipItem(f"no precision variants of {ctx.model_dir.name} (make them with `main.py prepare --variant`)")
    decoders = {
        name: (ctx.decoder if name == "fp32" else load_decoder(f, ctx.device, ctx.threads))
        for name, f in folders.items()
    }
    rows_n = ctx.sizes.batch_rows
    ids = ctx.random_ids(50)
    candidates = {}
    for name, decoder in decoders.items():
        candidates[f"{name} 1"] = Stepper(decoder, ids, 1)
        candidates[f"{name} {rows_n}"] = Stepper(decoder, ids, rows_n)
    reads = readers(ctx.sizes.bandwidth_mb)
    samples = interleaved({**candidates, **reads}, ctx.sizes.step_reps, settle=SESSION_SETTLE)
    for reader in reads.values():
        reader.close()
    nbytes = reads["one thread"].data.nbytes
    best_read = [min(times) for times in zip(*(r.best_seconds for r in reads.values()), strict=True)]
    best_read = best_read[-len(samples["fp32 1"]) :]  # the warm-up call's read is not a round
    ms = {name: value * 1e3 for name, value in medians({k: samples[k] for k in candidates}).items()}

    prompts = [ctx.tokenizer.encode(text) for text in PROMPTS[: ctx.sizes.agreement_prompts]]
    sequences = [greedy_ids(ctx.decoder, p, ctx.sizes.new_tokens) for p in prompts]
    cost = teacher_forced_cost(folders, prompts, sequences)
    boards = text_set_scoreboards(folders)

    item = "variants"
    out: list[Row] = []
    for name, folder in folders.items():
        weights = runtime_weight_bytes(folder / "model.onnx")
        floors = [weights * read / nbytes for read in best_read]
        step_vs_floor = statistics.median(s / f for s, f in zip(samples[f"{name} 1"], floors, strict=True))
        out += [
            Row(item, f"{name}: single-row step", ms[f"{name} 1"], unit="ms"),
            Row(item, f"{name}: {rows_n}-row step", ms[f"{name} {rows_n}"], unit="ms"),
            Row(item, f"{name}: single-row step / fp32's", paired_ratio(samples, f"{name} 1", "fp32 1")),
            Row(
                item, f"{name}: {rows_n}-row step / fp32's", paired_ratio(samples, f"{name} {rows_n}", f"fp32 {rows_n}")
            ),
            Row(item, f"{name}: weight bytes read per step", weights / 1e6, unit="MB"),
            Row(item, f"{name}: single-row step / bandwidth floor of its weights", step_vs_floor),
            Row(item, f"{name}: model files on disk", folder_bytes(folder) / 1e6, unit="MB"),
            Row(item, f"{name}: mean KL(fp32 ‖ {name}), teacher-forced", cost[name]["mean_kl"], unit="nats"),
            Row(item, f"{name}: max KL(fp32 ‖ {name})", cost[name]["max_kl"], unit="nats"),
            Row(item, f"{name}: top-1 agreement with fp32", 100 * cost[name]["top1_agreement"], unit="%"),
        ]
        if name in boards:
            board = boards[name]
            out += [
                Row(item, f"{name}: text set ({board['positions']} tokens): mean KL", board["mean_kl"], unit="nats"),
                Row(item, f"{name}: text set: 99th-percentile KL", board["p99_kl"], unit="nats"),
                Row(item, f"{name}: text set: same top token", 100 * board["same_top"], unit="%"),
                Row(item, f"{name}: text set: RMS Δp", 100 * board["rms_delta_p"], unit="%"),
                Row(item, f"{name}: text set: top-10 Jaccard", board["top10_jaccard"]),
            ]
    bandwidth = nbytes / statistics.median(best_read)
    out.append(Row(item, "read bandwidth (best of one thread / all cores, median round)", bandwidth / 1e9, unit="GB/s"))
    return out
