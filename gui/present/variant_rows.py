"""What the model picker and the "Add precision variant" dialog say about prepared models (Qt-free): a model's
line (name · precision · size on disk), the precision variants a model can have, what each is, its expected size,
whether it is prepared (its size and validation against fp32) and why one cannot be made."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gui.i18n import QT_TRANSLATE_NOOP, translate
from models.catalog import ModelInfo, folder_size, manifest_is_valid, models_dir, read_manifest
from models.optimized_graph import MODEL_FILE, WEIGHTS_FILE
from models.variants import (
    GGUF_SOURCES,
    GGUF_VARIANTS,
    VARIANT_BLOCKS,
    VARIANTS,
    gguf_tensor_types,
    is_current,
    missing_blocks,
    precision_of,
    types_text,
    variant_name,
)

# What each variant is, and how close to fp32 it reads (measured on the default model: bench/results.md).
MEANINGS = {
    "fp16": QT_TRANSLATE_NOOP("variant_rows", "Weights stored as float16, computed in float32: near-exact "
                                              "(KL vs fp32 about 1e-6)"),
    "int8": QT_TRANSLATE_NOOP("variant_rows", "8-bit weights, ONNX Runtime's dynamic quantization (activations "
                                              "quantized per call): approximate"),
    "int4": QT_TRANSLATE_NOOP("variant_rows", "4-bit weights re-quantized by ONNX Runtime in blocks of 32: the "
                                              "smallest, approximate"),
    "q4_1": QT_TRANSLATE_NOOP("variant_rows", "The GGUF's own 4-bit blocks run as they are: exact (the same "
                                              "distributions as fp32)"),
    "q8_0": QT_TRANSLATE_NOOP("variant_rows", "llama.cpp's Q8_0: 8-bit blocks of 32, weight-only (activations "
                                              "fp32): close to fp32"),
    "q4_0": QT_TRANSLATE_NOOP("variant_rows", "llama.cpp's Q4_0 with an 8-bit head: re-quantizes weights that "
                                              "were 4-bit already (the GGUF's Q4_1), approximate"),
    "q4_1r": QT_TRANSLATE_NOOP("variant_rows", "llama.cpp's Q4_1 quantizer with an 8-bit head: re-quantizes "
                                               "weights that were 4-bit already (mostly onto their own grid)"),
    "gguf": QT_TRANSLATE_NOOP("variant_rows", "The GGUF's own blocks of every type (Q4_K, Q5_0, Q6_K, Q8_0, Q4_1) "
                                              "run as they are: exact (the same distributions as fp32)"),
    "ggml": QT_TRANSLATE_NOOP("variant_rows", "The GGUF's own blocks, lm_head included, with activations rounded "
                                              "to 8 bits as llama.cpp rounds them: the fastest; it flips near-ties "
                                              "as often as llama.cpp does, not always the same ones"),
}
# A variant's weights over the fp32 model's, measured on the default model (its fp32 lm_head kept by q4_1); gguf's on
# gemma-3-270m (its fp32 embedding and lm_head are 77 % of its weights; on the default model gguf is q4_1's 0.47).
SIZE_RATIO = {"fp16": 0.50, "int8": 0.38, "int4": 0.31, "q4_1": 0.47, "q8_0": 0.48, "q4_0": 0.41, "q4_1r": 0.47,
              "gguf": 0.83, "ggml": 0.35}
# A variant's single-row step over fp32's, measured on the default model (bench item `variants`, 2 cores, quiet).
SPEED_RATIO = {"fp16": 0.98, "int8": 0.52, "int4": 0.99, "q4_1": 0.91, "q8_0": 1.01, "q4_0": 0.87, "q4_1r": 0.89,
               "gguf": 0.90, "ggml": 0.47}


def human_size(size: int) -> str:
    """'120 MB', '1.3 GB', '840 KB' (decimal units, as `main.py models`)."""
    value = float(size)
    for unit in ("B", "KB", "MB"):
        if value < 1000:
            return f"{value:.0f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"


def model_line(info: ModelInfo) -> str:
    """The picker's line for a prepared model: 'SmolLM2-135M-Instruct-q8_0 · q8_0 · KL 0.00033 · same top 98.7 % ·
    350 MB' (a variant's teacher-forced check against fp32, when its manifest has one); with its inspection model
    prepared, both sizes ('… · 754 MB + 650 MB inspection'): the folder holds both."""
    inspection = info.path / "inspection"
    extra = folder_size(inspection) if inspection.is_dir() else 0
    size = human_size(info.size_bytes - extra)
    if extra:
        size += " + " + translate("variant_rows", "{size} inspection").format(size=human_size(extra))
    parts = [info.name, precision_of(info.manifest), teacher_forced_text(info.manifest), size]
    return " · ".join(part for part in parts if part)


def teacher_forced_text(manifest: dict) -> str:
    """'KL 0.00033 · same top 98.7 %': a variant's teacher-forced check against fp32 over the text set ('' without)."""
    board = (manifest.get("variant") or {}).get("teacher_forced")
    if not board:
        return ""
    return translate("variant_rows", "KL {mean:.2g} · same top {top:.1f} %").format(mean=board["mean_kl"],
                                                                                  top=100 * board["same_top"])


def base_of(model_dir: Path) -> Path:
    """The fp32 model a variant was made from when it is prepared (else, and for any other model, itself)."""
    source = read_manifest(model_dir).get("source") or {}
    base = models_dir() / source["base"] if source.get("kind") == "variant" and source.get("base") else None
    return base if base is not None and (base / MODEL_FILE).is_file() else model_dir


def refusal(model_dir: Path) -> str | None:
    """Why no variant of this model can be made (None: they can)."""
    manifest = read_manifest(model_dir)
    name = manifest.get("name", model_dir.name)
    if not manifest_is_valid(model_dir):
        return translate("variant_rows", "{name} is not a complete prepared model (no valid manifest.json): "
                                         "variants are made from a model prepared into the cache.").format(name=name)
    if (manifest.get("source") or {}).get("kind") == "variant":
        return translate("variant_rows", "{name} is itself a precision variant and its fp32 model is not "
                                         "prepared.").format(name=name)
    if precision_of(manifest) != "fp32":  # e.g. a registered float16 ONNX export: nothing exact to start from
        return translate("variant_rows", "{name} has {precision} weights: precision variants are made from a "
                                         "model's fp32 weights.").format(name=name, precision=precision_of(manifest))
    return None


def gguf_refusal(model_dir: Path, manifest: dict, variant: str, types: dict[str, int] | None = None) -> str | None:
    """Why `variant` (q4_1, gguf or ggml) cannot be made from this model (None: it has its GGUF, with blocks of the
    variant's types; its hash is checked when preparing). `types`: the GGUF's tensor types, when already read."""
    source = manifest.get("source") or {}
    name = manifest.get("name", model_dir.name)
    if source.get("kind") not in GGUF_SOURCES or not source.get("gguf_sha256"):
        return translate("variant_rows", "Not for {name}: it was not prepared from a GGUF, and {variant} runs a GGUF's "
                                         "own blocks (the default model and gemma-3-270m have one).").format(
            name=name, variant=variant)
    path = model_dir / source.get("gguf", "")
    if not path.is_file():
        return translate("variant_rows", "Not for {name}: its GGUF is missing from its folder (prepare the model "
                                         "again).").format(name=name)
    types = gguf_tensor_types(path) if types is None else types
    if missing_blocks(variant, types):
        return translate("variant_rows", "Not for {name}: {variant} runs {blocks} blocks and its GGUF has none "
                                         "({types}).").format(name=name, variant=variant,
                                                              blocks=" / ".join(VARIANT_BLOCKS[variant]),
                                                              types=types_text(types))
    return None


def gguf_types(model_dir: Path, manifest: dict) -> dict[str, int] | None:
    """The tensor types of the GGUF in the model's folder (read once for both GGUF variants), None without one."""
    from models.gguf_file import GgufRefused

    path = model_dir / ((manifest.get("source") or {}).get("gguf") or "")
    if not path.is_file():
        return None
    try:
        return gguf_tensor_types(path)
    except GgufRefused:
        return {}


def validation_text(manifest: dict) -> str:
    """A prepared variant's check against fp32: teacher-forced over the text set (KL, same top token) when
    measured, else its few prompts' greedy tokens, top-1 agreement and KL."""
    record = manifest.get("variant") or {}
    greedy = record.get("greedy") or {}
    if "teacher_forced" in record:
        board = record["teacher_forced"]
        text = translate("variant_rows", "greedy: the first {same} of {count} tokens as fp32's · teacher-forced over "
                                         "{positions} tokens: KL vs fp32 {mean:.2g} (99th percentile {p99:.2g}) · "
                                         "same top {top:.1f} %").format(
            same=greedy.get("same_prefix", 0), count=len(greedy.get("ids", [])), positions=board["positions"],
            mean=board["mean_kl"], p99=board["p99_kl"], top=100 * board["same_top"])
        if record.get("speed"):
            text += translate("variant_rows", " · a step {ratio:.2f}x fp32's time (measured when prepared)").format(
                ratio=record["speed"]["ratio"])
        return text
    if "kl_mean" not in record:
        return ""
    prompts = record.get("kl_prompts") or []
    return translate("variant_rows", "greedy: the first {same} of {count} tokens as fp32's · top-1 agrees on "
                                     "{agree} of {prompts} prompts · KL vs fp32 {mean:.2g} (max {max:.2g})").format(
        same=greedy.get("same_prefix", 0), count=len(greedy.get("ids", [])),
        agree=round(record.get("top1_agreement", 0) * len(prompts)), prompts=len(prompts),
        mean=record["kl_mean"], max=record["kl_max"])


@dataclass(frozen=True)
class VariantRow:
    variant: str  # one of models.variants.VARIANTS
    name: str  # its model folder's name
    meaning: str  # what it is, exact or approximate
    expected_size: int  # bytes, estimated from the base's weights
    prepared_size: int | None  # bytes on disk when prepared from this base, else None
    validation: str  # its check against fp32 when prepared
    refused: str | None  # why it cannot be made from this base
    stale: bool = False  # prepared from an earlier preparation of the base: made again

    @property
    def can_prepare(self) -> bool:
        return self.prepared_size is None and self.refused is None

    def status(self) -> str:
        """The row's second line: why not, its size and check when prepared, else the expected size."""
        if self.refused:
            return self.refused
        if self.prepared_size is not None:
            return translate("variant_rows", "prepared · {size} on disk · {check}").format(
                size=human_size(self.prepared_size), check=self.validation)
        text = translate("variant_rows", "about {size} on disk · a step about {ratio:.2f}x fp32's time").format(
            size=human_size(self.expected_size), ratio=SPEED_RATIO[self.variant])
        if self.stale:
            text += translate("variant_rows", " · made from an earlier preparation of its model: made again")
        return text


def variant_rows(base_dir: Path) -> list[VariantRow]:
    """The variants of the prepared fp32 model in `base_dir`, each as the dialog lists it."""
    manifest = read_manifest(base_dir)
    base_name = manifest.get("name", base_dir.name)
    weights = sum((base_dir / f).stat().st_size for f in (MODEL_FILE, WEIGHTS_FILE) if (base_dir / f).is_file())
    side = sum(p.stat().st_size for p in base_dir.iterdir() if p.is_file() and p.name.startswith(("token", "config")))
    base_files = {n: e["sha256"] for n, e in (manifest.get("files") or {}).items() if n.startswith("model.")}
    rows, types = [], gguf_types(base_dir, manifest)
    for variant in VARIANTS:
        name = variant_name(base_name, variant)
        folder = models_dir() / name
        prepared = manifest_is_valid(folder) and is_current(read_manifest(folder), variant, base_files)
        refused = gguf_refusal(base_dir, manifest, variant, types) if variant in GGUF_VARIANTS else None
        rows.append(VariantRow(
            variant, name, translate("variant_rows", MEANINGS[variant]), round(SIZE_RATIO[variant] * weights) + side,
            folder_size(folder) if prepared else None, validation_text(read_manifest(folder)) if prepared else "",
            refused, stale=folder.is_dir() and not prepared))
    return rows
