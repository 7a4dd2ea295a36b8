"""Precision variants of a prepared model, made offline into model folders of their own
(`<base>-<variant>`, e.g. SmolLM2-135M-Instruct-q4_1), all-or-nothing like every preparation.

fp16, int8 and int4 transform the base model's fp32 graph (for a model prepared from a GGUF that graph is the GGUF's
weights dequantized, so they come from the same GGUF); q4_1 (the default model's Q4_1 blocks) and gguf (a GGUF's own
blocks of any type models.quantize.GGUF_BLOCKS decodes: gemma-3-270m's Q4_K / Q5_0 / Q6_K / Q8_0) run the GGUF's
own blocks exactly and need the base model's GGUF source (see models.quantize); ggml runs the same blocks, lm_head
included, as llama.cpp's CPU kernels do (activations rounded to int8 per block). Each variant is validated before it
is installed: the usual smoke test, greedy tokens on a fixed prompt beside the base model's, and KL(base ‖ variant)
of the next-token distributions after a few fixed prompts; all recorded in its manifest under "variant" (its
precision also as "precision")."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from models.catalog import MANIFEST_NAME, manifest_is_valid, models_dir, read_manifest, resolve
from models.errors import PrepareError
from models.manifest import build_manifest, write_manifest
from models.optimized_graph import MODEL_FILE, WEIGHTS_FILE
from models.progress import CancelCheck, ProgressCallback, Stages
from models.sources import GGUF_NAME, sha256_file

VARIANTS = {
    "fp16": "fp16 weights (weight-only: stored as float16, computed in float32)",
    "int8": "dynamic: activations quantized (uint8 per call; weights in 7 of int8's bits with a scale per output "
            "column, as ONNX Runtime's quantize_dynamic builds it)",
    "int4": "int4 weights, ONNX Runtime's stock block-32 asymmetric re-quantizer (MatMulNBits), lm_head at 4 bits too",
    "q4_1": "the GGUF's Q4_1 blocks run exactly (MatMulNBits + block-sum correction); lm_head fp32 (= its Q8_0)",
    "q8_0": "llama.cpp's Q8_0 format (blocks of 32, int8 and a scale each; each scale fitted for least error, "
            "which on 4-bit weights lines their levels up with the int8 grid), weight-only: stored as int8 and "
            "dequantized into fp32 weights when the session loads (activations fp32)",
    "q4_0": "llama.cpp's Q4_0 (blocks of 32, 4 bits and a scale each) with the lm_head at Q8_0; re-quantizes "
            "weights that were 4-bit already (the GGUF's Q4_1)",
    "q4_1r": "llama.cpp's Q4_1 quantizer (blocks of 32, 4 bits, a scale and a min each) on the fp32 weights, "
             "lm_head at Q8_0; on weights that were Q4_1 already (the default model) it lands on their own grid "
             "exactly",
    "gguf": "the GGUF's own blocks run exactly, whatever their types (Q4_1, Q4_K, Q5_0, Q6_K, Q8_0): the 4-bit "
            "ones as MatMulNBits + block-sum correction, the others stored as integers and dequantized into fp32 "
            "weights when the session loads; lm_head fp32 (= its GGUF tensor)",
    "ggml": "the GGUF's own blocks, lm_head included, with activations rounded to int8 per block as llama.cpp's CPU "
            "kernels round them (MatMulNBits at accuracy level 4: ONNX Runtime's rounding, of llama.cpp's kind and "
            "size, not bit for bit its); the fastest",
}
BLOCK_VARIANTS = {"q8_0": "q8_0", "q4_0": "q4_0", "q4_1r": "q4_1"}  # variant → models.quantize block scheme
# MatMulNBits' accuracy level each variant runs at: 0 keeps activations fp32; 4 would round them to int8 per block
# as llama.cpp's own Q8_0 / Q4 kernels do. int8 (dynamic) quantizes activations itself, per call.
ACCURACY_LEVEL = {"fp16": None, "int8": None, "int4": 0, "q4_1": 0, "q8_0": 0, "q4_0": 0, "q4_1r": 0, "gguf": 0,
                  "ggml": 4}
GGUF_VARIANTS = ("q4_1", "gguf", "ggml")  # made from the base's GGUF
EXACT_VARIANTS = ("q4_1", "gguf")  # the GGUF's blocks with fp32 activations: validated against EXACT_KL
GGUF_BLOCKS = ("Q4_1", "Q4_K", "Q5_0", "Q6_K", "Q8_0")  # models.quantize.GGUF_BLOCKS' types (no import at startup)
# a GGUF variant needs a tensor of one of its types
VARIANT_BLOCKS = {"q4_1": ("Q4_1",), "gguf": GGUF_BLOCKS, "ggml": GGUF_BLOCKS}
GGUF_SOURCES = ("pypi-wheel", "pypi-chunks", "gguf-file")  # source kinds that keep their GGUF in the folder
VARIANT_PLAN = [("setup", 0.2), ("source", 2), ("quantize", 20), ("save", 4), ("validate", 12), ("install", 1)]
GREEDY_PROMPT = "Once upon a time, in a small village by the sea,"
GREEDY_TOKENS = 16
KL_PROMPTS = (
    "Although I was tired, I still decided to",
    "The capital of France is",
    "def fibonacci(n):",
    "Once upon a time, in a small village by the sea,",
    "The three most important things to remember when learning a language are",
)
# Dynamic int8 quantizes activations with one scale per call: a prefill of the whole sequence and the same
# sequence read step by step through the KV cache see different scales, so their logits differ by design (the
# difference is recorded in the manifest's smoke_test.cache_max_abs_diff).
# ggml rounds activations to int8: the float sums of a prefill and of single steps differ by ~1e-7, and where a value
# sits at a rounding edge that becomes a whole int8 step, so the two differ by up to ~0.7 in a logit (llama.cpp's
# results depend on the batch size for the same reason).
SMOKE_TOLERANCE = {"int8": float("inf"), "ggml": float("inf")}
EXACT_KL = 1e-6  # q4_1 and gguf reproduce the fp32 graph's weights: anything above this is a bug, not noise


# A variant's recipe, raised when the way it is made changes: folders made by an older recipe are made again.
# int8 2: 7-bit weights per column (1: onnxruntime's per-channel quantizer, whose int8 weights saturate AVX2 kernels).
# q4_1, gguf, ggml, q4_0, q4_1r 2: sibling matrices (q, k, v; gate, up) as one MatMulNBits and a Split.
RECIPES = {"int8": 2, "q4_1": 2, "gguf": 2, "ggml": 2, "q4_0": 2, "q4_1r": 2}


def is_current(manifest: dict, variant: str, base_files: dict[str, str]) -> bool:
    """Whether a variant folder's manifest says it was made from these base files (a base prepared again: made again)
    by the current recipe."""
    made_from = (manifest.get("source") or {}).get("base_files_sha256")
    return made_from == base_files and (manifest.get("variant") or {}).get("recipe", 1) == RECIPES.get(variant, 1)


def variant_name(base: str, variant: str) -> str:
    return f"{base}-{variant}"


def precision_of(manifest: dict) -> str:
    """A prepared model's precision: its variant's, else its graph's dtype ("fp32" / "fp16")."""
    if manifest.get("precision"):
        return manifest["precision"]
    return "fp16" if manifest.get("dtype") == "float16" else "fp32"


def base_gguf(base_dir: Path, manifest: dict, variant: str = "q4_1") -> Path:
    """The GGUF the base model was prepared from, kept in its folder with the recorded hash; a clear
    PrepareError when the base has no GGUF source, or none of the blocks `variant` runs."""
    source = manifest.get("source") or {}
    recorded = source.get("gguf_sha256")
    if source.get("kind") not in GGUF_SOURCES or not recorded:
        raise PrepareError(
            "source",
            f"{manifest.get('name', base_dir.name)} has no GGUF source "
            f"(prepared from {source.get('kind', 'unknown')}); "
            f"the {variant} variant runs a GGUF's own blocks, so it can only be made from a model prepared from a "
            "GGUF (the default model, gemma-3-270m, `prepare --gguf`; fp16, int8 and int4 work from any prepared "
            "fp32 model)",
        )
    path = base_dir / source.get("gguf", GGUF_NAME)
    if not path.is_file():
        raise PrepareError("source", f"{path} is missing; prepare the base model again (`main.py prepare --force`)")
    actual = sha256_file(path)
    if actual != recorded:
        raise PrepareError("source", f"{path} has sha256 {actual}, its manifest records {recorded}")
    types = gguf_tensor_types(path)
    if missing_blocks(variant, types):
        hint = "; its gguf variant runs the blocks it has" if variant == "q4_1" else ""
        raise PrepareError("source", f"{path.name} has no {' / '.join(VARIANT_BLOCKS[variant])} blocks (its tensors: "
                                     f"{types_text(types)}){hint}")
    return path


def gguf_tensor_types(path: Path) -> dict[str, int]:
    """A GGUF's tensor types and how many tensors of each ({"Q4_K": 27, …}), from its header."""
    from models.gguf_file import read_summary

    return read_summary(path).tensor_types


def missing_blocks(variant: str, types: dict[str, int]) -> bool:
    """Whether a GGUF with these tensor types has none of the blocks `variant` runs."""
    return not any(kind in types for kind in VARIANT_BLOCKS[variant])


def types_text(types: dict[str, int]) -> str:
    """'27 Q4_K, 81 Q5_0, 9 Q6_K, 10 Q8_0' (the quantized ones; 'F32 only' when none is)."""
    quantized = sorted(kind for kind in types if kind not in ("F32", "F16", "BF16"))
    return ", ".join(f"{types[kind]} {kind}" for kind in quantized) or "F32 only"


def prepare_variant(
    variant: str,
    base: str | Path | None = None,
    *,
    force: bool = False,
    progress: ProgressCallback | None = None,
    cancel: CancelCheck = None,
) -> Path:
    """Prepare `variant` (one of VARIANTS) of the prepared model `base` (default: the default model)."""
    from models.prepare import build_folder, is_prepared, replace_folder

    if variant not in VARIANTS:
        raise ValueError(f"unknown precision variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    stages = Stages(VARIANT_PLAN, progress, cancel)
    base_dir = resolve(base)
    base_manifest = read_manifest(base_dir)
    if not manifest_is_valid(base_dir):
        raise PrepareError("setup", f"{base_dir} is not a complete prepared model; run `main.py prepare` first")
    if base_manifest.get("source", {}).get("kind") == "variant":
        raise PrepareError("setup", f"{base_manifest['name']} is itself a precision variant; name its fp32 base")
    base_name = base_manifest.get("name", base_dir.name)
    name = variant_name(base_name, variant)
    final = models_dir() / name
    base_files = {n: e["sha256"] for n, e in base_manifest["files"].items() if n.startswith("model.")}
    if is_prepared(final, force or not is_current(read_manifest(final), variant, base_files), stages):
        return final
    with build_folder(name, stages) as build:
        with stages.stage("source", f"checking the source of {base_name}"):
            gguf = base_gguf(base_dir, base_manifest, variant) if variant in GGUF_VARIANTS else None
            copy_side_files(base_dir, build)
        report = transform(variant, base_dir, build, gguf, stages)
        with stages.stage("validate", "greedy tokens and teacher-forced KL against the fp32 model"):
            from models.teacher_forced import compare_models
            from models.validate import smoke_test

            smoke = smoke_test(build, tolerance=SMOKE_TOLERANCE.get(variant))
            validation = validate_variant(base_dir, build)
            stages.check_cancel()
            validation["teacher_forced"] = compare_models(base_dir, build)
            stages.check_cancel()
            validation["speed"] = step_speed(base_dir, build)
        if variant in EXACT_VARIANTS and validation["teacher_forced"]["max_kl"] > EXACT_KL:
            raise PrepareError(
                "validate", f"{variant} should reproduce the fp32 model, but KL is "
                f"{validation['teacher_forced']['max_kl']:.2e}"
            )
        source = {
            "kind": "variant",
            "base": base_name,
            "precision": variant,
            "base_files_sha256": base_files,
        }
        if gguf is not None:
            source |= {"gguf": gguf.name, "gguf_sha256": base_manifest["source"]["gguf_sha256"]}
        with stages.stage("install", f"installing into {final}"):
            known = {n: e["sha256"] for n, e in base_manifest["files"].items() if not n.startswith("model.")}
            edits = {
                "applied": base_manifest.get("graph_edits", []),
                "skipped": base_manifest.get("graph_edits_skipped", {}),
            }
            manifest = build_manifest(name, build, source, smoke, known, dict(stages.seconds), edits, "none")
            manifest["precision"] = variant
            if "licence" in base_manifest:  # a variant is its base's weights: its licence too
                manifest["licence"] = base_manifest["licence"]
            manifest["variant"] = {"precision": variant, "meaning": VARIANTS[variant], "transform": report,
                                   "accuracy_level": ACCURACY_LEVEL[variant], "recipe": RECIPES.get(variant, 1)}
            manifest["variant"] |= validation
            write_manifest(build, manifest)
            stages.check_cancel()
            replace_folder(build, final)
        return final


def copy_side_files(base_dir: Path, build: Path) -> None:
    """Everything but the graph, its weights, the GGUF, the manifest and the inspection model."""
    skip = {MANIFEST_NAME, MODEL_FILE, WEIGHTS_FILE, GGUF_NAME}
    for path in base_dir.iterdir():
        if path.is_file() and path.name not in skip and not path.name.endswith(".gguf"):
            shutil.copy2(path, build / path.name)


def transform(variant: str, base_dir: Path, build: Path, gguf: Path | None, stages: Stages) -> dict:
    import onnx

    from models import quantize

    with stages.stage("quantize", f"{variant}: rewriting the weights"):
        model = onnx.load(str(base_dir / MODEL_FILE))
        stages.check_cancel()

        def tick(fraction: float, message: str) -> None:  # after each matrix: progress, and a cancel stops here
            stages.report(fraction, message)
            stages.check_cancel()

        report: dict = {}
        if variant == "fp16":
            quantize.to_fp16(model, tick)
        elif variant == "int8":
            quantize.to_int8_dynamic(model, tick)
            report = {"scheme": "dynamic int8: activations uint8 per call, weights in -63..63 per output column"}
        elif variant in BLOCK_VARIANTS:
            model, report = quantize.to_blocks(model, BLOCK_VARIANTS[variant], tick, ACCURACY_LEVEL[variant])
        elif variant == "int4":
            quantize.to_int4_stock(model, tick)
            report = {"tool": "onnxruntime quantize_matmul_4bits", "block_size": 32, "symmetric": False}
        else:
            assert gguf is not None
            kinds = VARIANT_BLOCKS[variant]
            try:
                model, report = quantize.to_gguf_exact(model, gguf, tick, accuracy_level=ACCURACY_LEVEL[variant],
                                                       kinds=kinds)
            except quantize.QuantizeError as exc:
                raise PrepareError("quantize", str(exc)) from exc
    with stages.stage("save", "writing model.onnx and its weights"):
        onnx.save(
            model, str(build / MODEL_FILE), save_as_external_data=True, location=WEIGHTS_FILE, size_threshold=1024
        )
    return report


def next_token_logits(session, layout: dict, ids: list[int]) -> np.ndarray:
    from models.validate import empty_past, run_step

    logits, _ = run_step(session, layout, np.array([ids], dtype=np.int64), empty_past(layout), 0)
    return logits


def log_softmax(logits: np.ndarray) -> np.ndarray:
    x = logits.astype(np.float64)
    x = x - x.max()
    return x - np.log(np.exp(x).sum())


def kl(reference: np.ndarray, other: np.ndarray) -> float:
    """KL(p_reference ‖ p_other) in nats of two logits rows."""
    lp, lq = log_softmax(reference), log_softmax(other)
    return float(np.sum(np.exp(lp) * (lp - lq)))


def validate_variant(base_dir: Path, variant_dir: Path) -> dict:
    """Greedy tokens on GREEDY_PROMPT (base and variant, with the KV cache) and KL(base ‖ variant) of the
    next-token distribution after each of KL_PROMPTS."""
    from tokenizers import Tokenizer

    from models.validate import greedy_with_cache, kv_layout, open_session

    tokenizer = Tokenizer.from_file(str(variant_dir / "tokenizer.json"))
    sessions = [open_session(d / MODEL_FILE) for d in (base_dir, variant_dir)]
    layouts = [kv_layout(s) for s in sessions]
    prompt_ids = tokenizer.encode(GREEDY_PROMPT, add_special_tokens=False).ids
    greedy = [greedy_with_cache(s, lay, prompt_ids, GREEDY_TOKENS)[0] for s, lay in zip(sessions, layouts, strict=True)]
    same = next((i for i, (a, b) in enumerate(zip(*greedy, strict=True)) if a != b), GREEDY_TOKENS)
    rows = []
    for prompt in KL_PROMPTS:
        ids = tokenizer.encode(prompt, add_special_tokens=False).ids
        base_logits, logits = (next_token_logits(s, lay, ids) for s, lay in zip(sessions, layouts, strict=True))
        rows.append(
            {
                "prompt": prompt,
                "kl": kl(base_logits, logits),
                "top1_base": int(np.argmax(base_logits)),
                "top1": int(np.argmax(logits)),
            }
        )
    kls = [r["kl"] for r in rows]
    return {
        "greedy": {
            "prompt": GREEDY_PROMPT,
            "base_ids": greedy[0],
            "ids": greedy[1],
            "text": tokenizer.decode(greedy[1]),
            "same_prefix": same,
        },
        "kl_prompts": rows,
        "kl_mean": float(np.mean(kls)),
        "kl_max": float(np.max(kls)),
        "top1_agreement": sum(r["top1"] == r["top1_base"] for r in rows) / len(rows),
    }


SPEED_CONTEXT = 50  # step_speed: the prompt's tokens
SPEED_STEPS = 12  # step_speed: single-row steps timed for each model, alternating


def step_speed(base_dir: Path, variant_dir: Path) -> dict:
    """A single-row decode step of the variant against its base's, as a lane runs it (runtime.OnnxDecoder, the CPU),
    timed alternately on a prompt of SPEED_CONTEXT tokens: the medians in ms and the variant's over the base's.
    Measured on the machine that prepares it, whatever else it is doing (a bench run measures it quietly)."""
    import statistics
    import time

    from runtime.decoder import OnnxDecoder

    decoders = [OnnxDecoder(folder, "cpu") for folder in (base_dir, variant_dir)]
    states = []
    for decoder in decoders:
        decoder.warmup()
        state, logits = decoder.prefill(list(range(3, 3 + SPEED_CONTEXT)))
        states.append(state)
    seconds: list[list[float]] = [[], []]
    for _ in range(SPEED_STEPS):
        for index, decoder in enumerate(decoders):
            start = time.perf_counter()
            states[index], _ = decoder.step(states[index], [0], [3])
            seconds[index].append(time.perf_counter() - start)
    base_ms, variant_ms = (1e3 * statistics.median(values) for values in seconds)
    return {"base_ms": base_ms, "variant_ms": variant_ms, "ratio": variant_ms / base_ms, "context": SPEED_CONTEXT}


def speed_text(manifest: dict) -> str:
    """'step 0.48x fp32's' from a variant's measured speed ('' when it was prepared before speeds were measured)."""
    speed = (manifest.get("variant") or {}).get("speed")
    return f"step {speed['ratio']:.2f}x fp32's" if speed else ""


def describe(manifest: dict) -> str:
    """One line for `main.py models`: precision, and for a variant its teacher-forced KL and same-top against
    fp32 and its step's speed ('ggml (KL 0.0042 · same top 95.5 % · step 0.48x fp32's)'; a variant prepared before
    the text set: its few-prompt KL)."""
    from models.teacher_forced import summary_text

    variant = manifest.get("variant")
    if not variant:
        return precision_of(manifest)
    if "teacher_forced" in variant:
        parts = [summary_text(variant["teacher_forced"]), speed_text(manifest)]
        return f"{variant['precision']} ({' · '.join(part for part in parts if part)})"
    return f"{variant['precision']} (KL {variant['kl_mean']:.2g}, 5 prompts)"
