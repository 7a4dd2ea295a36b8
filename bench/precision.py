"""Precision options: an fp16 export of the prepared model, and the suite's check that an option keeps >= 95 %
greedy agreement with fp32 (5 prompts x 64 tokens) before it may be offered, measured with its step speed."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from bench.context import BenchContext, load_decoder
from bench.decoder_items import Stepper
from bench.report import Row, SkipItem
from bench.timing import SESSION_SETTLE, interleaved, medians, paired_ratio

PROMPTS = (
    "Although I was tired, I still decided to",
    "The capital of France is",
    "def fibonacci(n):",
    "Once upon a time, in a small village by the sea,",
    "The three most important things to remember when learning a language are",
)
FP16_DIR_NAME = "fp16"


def export_fp16(model_dir: Path, out_dir: Path) -> Path:
    """An fp16 optimum export of a prepared model (same weights, dequantized by transformers) into out_dir."""
    from optimum.exporters.onnx import main_export

    from bench.engine_items import load_torch_model

    with tempfile.TemporaryDirectory(prefix="bench-fp16-") as tmp:
        load_torch_model(model_dir).save_pretrained(tmp)
        main_export(
            tmp,
            output=str(out_dir),
            task="text-generation-with-past",
            device="cpu",
            dtype="fp16",
            do_validation=False,
        )
    for name in (
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "generation_config.json",
    ):
        if (model_dir / name).is_file():
            shutil.copy2(model_dir / name, out_dir / name)
    return out_dir


def greedy_ids(decoder, prompt_ids: list[int], new_tokens: int) -> list[int]:
    state, logits = decoder.prefill(prompt_ids)
    tokens = []
    for _ in range(new_tokens):
        tokens.append(int(logits.argmax()))
        state, rows = decoder.step(state, [0], [tokens[-1]])
        logits = rows[0]
    return tokens


def forced_argmax(decoder, prompt_ids: list[int], tokens: list[int]) -> list[int]:
    """The decoder's argmax at every position of a given continuation (teacher forcing): one divergence does
    not change the prefix the later positions are judged on."""
    state, logits = decoder.prefill(prompt_ids)
    choices = [int(logits.argmax())]
    for token in tokens[:-1]:
        state, rows = decoder.step(state, [0], [token])
        choices.append(int(rows[0].argmax()))
    return choices


def greedy_agreement(reference, other, prompt_ids: list[int], new_tokens: int) -> tuple[float, bool]:
    """(share of positions where `other` picks reference's greedy token, whole sequences identical)."""
    expected = greedy_ids(reference, prompt_ids, new_tokens)
    got = forced_argmax(other, prompt_ids, expected)
    same = sum(a == b for a, b in zip(expected, got, strict=True))
    return same / len(expected), same == len(expected)


def variant_dir(model_dir: Path, variant: str = FP16_DIR_NAME) -> Path:
    """Where the suite keeps a model's precision variants (outside the models folder: not prepared models)."""
    from models.catalog import cache_root

    return cache_root() / "bench" / f"{model_dir.name}-{variant}"


def measure_precision(ctx: BenchContext) -> list[Row]:
    folder = variant_dir(ctx.model_dir)
    if not (folder / "model.onnx").is_file():
        raise SkipItem(f"no fp16 export at {folder} (make it with `python -m bench.precision`)")
    fp16 = load_decoder(folder, ctx.device, ctx.threads)
    tokens = ctx.sizes.new_tokens
    prompts = [ctx.tokenizer.encode(text) for text in PROMPTS[: ctx.sizes.agreement_prompts]]
    results = [greedy_agreement(ctx.decoder, fp16, ids, tokens) for ids in prompts]
    share = 100 * sum(part for part, _ in results) / len(results)
    ids = ctx.random_ids(50)
    steppers = {"fp32": Stepper(ctx.decoder, ids, 1), "fp16": Stepper(fp16, ids, 1)}
    samples = interleaved(steppers, ctx.sizes.step_reps, settle=SESSION_SETTLE)
    item = "precision"
    whole = sum(same for _, same in results)
    return [
        Row(
            item,
            f"fp16 greedy agreement with fp32 ({len(prompts)} prompts x {tokens} tokens)",
            share,
            unit="%",
            goal=">= 95",
        ),
        Row(item, "fp16 prompts whose whole greedy sequence equals fp32's", whole, unit=f"of {len(prompts)}"),
        Row(item, "fp16 single-row step / fp32", paired_ratio(samples, "fp16", "fp32")),
        Row(item, "fp16 single-row step", medians(samples)["fp16"] * 1e3, unit="ms"),
    ]


def main() -> int:  # python -m bench.precision [MODEL]: write the fp16 export for the suite
    import sys

    from models.catalog import resolve

    model_dir = resolve(sys.argv[1] if len(sys.argv) > 1 else None)
    print(export_fp16(model_dir, variant_dir(model_dir)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
