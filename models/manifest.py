"""The manifest.json written into every prepared model folder."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
from importlib import metadata
from pathlib import Path

from models.catalog import MANIFEST_NAME, SCHEMA_VERSION
from models.sources import sha256_file

TOOLS = (
    "torch",
    "transformers",
    "optimum",
    "optimum-onnx",
    "onnx",
    "onnxruntime-gpu",
    "onnxruntime",
    "tokenizers",
    "gguf",
    "numpy",
)


def tool_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in TOOLS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def file_entries(model_dir: Path, known_hashes: dict[str, str]) -> dict[str, dict]:
    entries = {}
    for path in sorted(p for p in model_dir.iterdir() if p.is_file() and p.name != MANIFEST_NAME):
        digest = known_hashes.get(path.name) or sha256_file(path)
        entries[path.name] = {"size": path.stat().st_size, "sha256": digest}
    return entries


def read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def as_list(value) -> list[int]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def token_ids(model_dir: Path) -> dict:
    """eos / bos / pad ids as generation will use them: generation_config.json first, then config.json."""
    generation = read_json(model_dir / "generation_config.json")
    config = read_json(model_dir / "config.json")

    def pick(key: str):
        return generation.get(key, config.get(key))

    return {
        "eos_token_ids": as_list(pick("eos_token_id")),
        "bos_token_id": pick("bos_token_id"),
        "pad_token_id": pick("pad_token_id"),
    }


def model_facts(model_dir: Path, layout: dict) -> dict:
    config = read_json(model_dir / "config.json")
    return {
        "model_type": config.get("model_type"),
        "architectures": config.get("architectures", []),
        "num_layers": layout["num_layers"],
        "num_kv_heads": layout["num_kv_heads"],
        "head_dim": layout["head_dim"],
        "hidden_size": config.get("hidden_size", config.get("n_embd")),
        "num_attention_heads": config.get("num_attention_heads", config.get("n_head")),
        "vocab_size": config.get("vocab_size"),
        "max_position_embeddings": config.get("max_position_embeddings", config.get("n_positions")),
        **attention_kinds(config),
    }


def attention_kinds(config: dict) -> dict:
    """Which layers attend within a sliding window (Gemma 3: five of every six) and how wide it is; {} for models
    whose layers all attend to the whole context."""
    kinds = config.get("layer_types")
    if not kinds or all(kind == "full_attention" for kind in kinds):
        return {}
    return {
        "layer_types": kinds,
        "sliding_window": config.get("sliding_window"),
        "sliding_window_layers": [i for i, kind in enumerate(kinds) if kind == "sliding_attention"],
    }


def build_manifest(
    name: str,
    model_dir: Path,
    source: dict,
    smoke: dict,
    known_hashes: dict[str, str],
    stage_seconds: dict[str, float],
    graph_edits: dict,
    graph_optimization: str,
) -> dict:
    """graph_edits: {"applied": [edit names], "skipped": {edit name: why}} (models.graph_edits);
    graph_optimization: "basic" when model.onnx is saved as models.optimized_graph does it, "none" as exported."""
    graph = smoke["graph"]
    past = next(i for i in graph["inputs"] if i["name"].startswith("past_key_values."))
    return {
        "schema_version": SCHEMA_VERSION,
        "name": name,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "source": source,
        "dtype": "float16" if past["dtype"] == "tensor(float16)" else "float32",
        "model": model_facts(model_dir, smoke["layout"]),
        "tokens": token_ids(model_dir),
        "graph": graph,
        "graph_edits": graph_edits["applied"],
        "graph_edits_skipped": graph_edits["skipped"],
        "graph_optimization": graph_optimization,
        "in_place_kv": in_place_record(model_dir),
        "smoke_test": {
            k: smoke[k] for k in ("prompt", "prompt_ids", "generated_ids", "continuation", "cache_max_abs_diff")
        },
        "tools": tool_versions(),
        "files": file_entries(model_dir, known_hashes),
        "prepare_seconds": stage_seconds,
    }


def in_place_record(model_dir: Path) -> dict:
    """Whether the runtime writes this graph's KV cache in place (runtime.in_place_kv, a load-time edit), and why
    not where it cannot: the graph keeps the export's Concat-grown cache then, with the same logits."""
    import onnx

    from runtime.in_place_kv import in_place_mismatch

    reason = in_place_mismatch(onnx.load(str(model_dir / "model.onnx"), load_external_data=False))
    return {"applied": reason is None} | ({"why_not": reason} if reason else {})


def write_manifest(model_dir: Path, manifest: dict) -> None:
    """Atomically (a temporary file, then a rename): a reader never sees a half-written manifest, even when it
    is updated in place (models.inspection adds its record to an installed model's manifest)."""
    path = model_dir / MANIFEST_NAME
    temp = path.with_name(f".{MANIFEST_NAME}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temp, path)
