"""Where prepared models live and what is there: the cache root, one folder per model, a manifest each."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"
MANIFEST_NAME = "manifest.json"
# 2: model.onnx carries the preparation's graph edits (manifest "graph_edits"); older folders are re-prepared.
# 3: model.onnx is the graph as ONNX Runtime's basic optimisations leave it, its weights in model.onnx_data
#    (models.optimized_graph); schema 2 folders are migrated (their graph optimised, no new export).
# 4: model.onnx has the fused_attention graph edit (ONNX Attention, opset 23) where it applies; schema 2 and 3
#    folders are migrated (the edits they lack applied to their graph, no new export).
SCHEMA_VERSION = 4
MIGRATABLE_SCHEMAS = (2, 3)
# Build folders in progress (on the cache's filesystem, so installing is one rename).
PARTIAL_PREFIX = ".partial-"


def cache_root() -> Path:
    """BRANCHPOINT_CACHE_DIR if set, else the platform's user cache dir for branchpoint."""
    override = os.environ.get("BRANCHPOINT_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("branchpoint"))


def models_dir() -> Path:
    return cache_root() / "models"


def default_model_dir() -> Path:
    return models_dir() / DEFAULT_MODEL_NAME


def read_manifest(model_dir: str | Path) -> dict:
    """The manifest of a prepared model folder ({} if it has none or it is unreadable)."""
    try:
        return json.loads((Path(model_dir) / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def manifest_is_valid(model_dir: str | Path) -> bool:
    """True when the manifest has the current schema version and every file it lists is present with its
    recorded size."""
    manifest = read_manifest(model_dir)
    return manifest.get("schema_version") == SCHEMA_VERSION and files_intact(Path(model_dir), manifest)


def needs_migration(model_dir: str | Path) -> bool:
    """True for an intact folder prepared with an earlier schema that can be migrated (see SCHEMA_VERSION), which
    `prepare` brings up to date without exporting again. Folders registered as is are registered again, and
    precision variants (models.variants) are made again from their base."""
    manifest = read_manifest(model_dir)
    return (
        manifest.get("schema_version") in MIGRATABLE_SCHEMAS
        and (manifest.get("source") or {}).get("kind") not in ("onnx-folder", "variant")
        and files_intact(Path(model_dir), manifest)
    )


def files_intact(model_dir: Path, manifest: dict) -> bool:
    """Every file the manifest lists is present with its recorded size (model.onnx among them)."""
    files = manifest.get("files")
    if not files or "model.onnx" not in files:
        return False
    for name, info in files.items():
        path = model_dir / name
        if not path.is_file() or path.stat().st_size != info.get("size"):
            return False
    return True


@dataclass(frozen=True)
class ModelInfo:
    name: str
    path: Path
    size_bytes: int
    source: str
    created: str
    valid: bool
    manifest: dict = field(default_factory=dict, repr=False, compare=False)


def describe_source(manifest: dict) -> str:
    source = manifest.get("source") or {}
    kind = source.get("kind", "unknown")
    keys = ("base", "package", "model_id", "path", "gguf")
    detail = next((source[k] for k in keys if source.get(k)), "")
    return f"{kind}: {detail}" if detail else kind


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def model_info(path: Path) -> ModelInfo:
    manifest = read_manifest(path)
    return ModelInfo(
        name=manifest.get("name", path.name),
        path=path,
        size_bytes=folder_size(path),
        source=describe_source(manifest),
        created=manifest.get("created", ""),
        valid=manifest_is_valid(path),
        manifest=manifest,
    )


def list_models() -> list[ModelInfo]:
    """Prepared models in the cache, sorted by name (build folders in progress are skipped)."""
    root = models_dir()
    if not root.is_dir():
        return []
    folders = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return [model_info(p) for p in sorted(folders) if (p / "model.onnx").exists()]


def resolve(name_or_path: str | Path | None = None) -> Path:
    """A prepared model's folder from its name (default: the default model) or a folder holding model.onnx."""
    if name_or_path is None:
        name_or_path = DEFAULT_MODEL_NAME
    candidate = Path(name_or_path).expanduser()
    if (candidate / "model.onnx").is_file():
        return candidate
    by_name = models_dir() / str(name_or_path)
    if (by_name / "model.onnx").is_file():
        return by_name
    known = ", ".join(m.name for m in list_models()) or "none"
    raise FileNotFoundError(
        f"no prepared model named or at {str(name_or_path)!r} (prepared: {known}); run `python main.py prepare`"
    )


def tokenizer_vocabulary(model_dir: str | Path) -> tuple[dict, list]:
    """A prepared model's vocabulary as its tokenizer.json has it: (token -> id, sorted added (id, token)).
    FileNotFoundError when the folder has no tokenizer.json."""
    data = json.loads((Path(model_dir) / "tokenizer.json").read_text(encoding="utf-8"))
    added = sorted((t["id"], t["content"]) for t in data.get("added_tokens", []))
    return data.get("model", {}).get("vocab", {}), added


def vocabulary_size(vocabulary: tuple[dict, list]) -> int:
    return len(vocabulary[0]) + len(vocabulary[1])

