"""GGUF files already on this computer, found where ollama and LM Studio keep them, listed with what their headers
say (name, architecture, quantization, size) and whether Branchpoint can prepare them. Nothing is copied or
converted here: the window's picker lists them and `models.prepare.prepare_gguf(found.path, name=found.name)`
prepares the one chosen.

- ollama: `$OLLAMA_MODELS`, else `~/.ollama/models` (and a Linux service's `/usr/share/ollama/.ollama/models`).
  `manifests/<registry>/<namespace>/<model>/<tag>` is a JSON manifest whose layer of media type
  `application/vnd.ollama.image.model` names the GGUF blob by digest: `blobs/sha256-<hex>`.
- LM Studio: `~/.lmstudio/models` and the older `~/.cache/lm-studio/models`, as `<publisher>/<repo>/<file>.gguf`
  (vision projectors, `mmproj-*.gguf`, are not models of their own and are skipped).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from models.gguf_file import GgufRefused, check_summary, read_summary

OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
DEFAULT_REGISTRY = "registry.ollama.ai"
NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class LocalGguf:
    path: Path
    name: str  # a name for the cache folder ("llama3.2-1b", "Qwen2.5-0.5B-Instruct-Q4_K_M")
    label: str  # as its application names it ("llama3.2:1b", "Qwen/Qwen2.5-0.5B-Instruct-GGUF/….gguf")
    found_by: str  # "ollama" | "LM Studio"
    architecture: str
    quantization: str
    size_bytes: int
    parameters: int
    refused: str | None  # why Branchpoint cannot prepare it (None: it can)

    @property
    def preparable(self) -> bool:
        return self.refused is None


def ollama_roots() -> list[Path]:
    override = os.environ.get("OLLAMA_MODELS")
    if override:
        return [Path(override).expanduser()]
    return [Path.home() / ".ollama" / "models", Path("/usr/share/ollama/.ollama/models")]


def lm_studio_roots() -> list[Path]:
    return [Path.home() / ".lmstudio" / "models", Path.home() / ".cache" / "lm-studio" / "models"]


def find_local_ggufs() -> list[LocalGguf]:
    """Every GGUF model ollama and LM Studio hold here, sorted by where and name (unreadable entries skipped)."""
    found = [*ollama_models(), *lm_studio_models()]
    unique = {item.path.resolve(): item for item in found}
    return sorted(unique.values(), key=lambda item: (item.found_by, item.label.lower()))


def ollama_models() -> list[LocalGguf]:
    found = []
    for root in ollama_roots():
        manifests = root / "manifests"
        if not manifests.is_dir():
            continue
        for manifest in sorted(p for p in manifests.rglob("*") if p.is_file()):
            blob = ollama_model_blob(root, manifest)
            if blob is not None:
                label = ollama_label(manifest.relative_to(manifests))
                found.append(describe(blob, safe_name(label.replace(":", "-")), label, "ollama"))
    return found


def ollama_model_blob(root: Path, manifest: Path) -> Path | None:
    """The GGUF blob a manifest's model layer names (None when it names none, or it is missing)."""
    try:
        layers = json.loads(manifest.read_text(encoding="utf-8")).get("layers", [])
    except (OSError, ValueError, AttributeError):
        return None
    for layer in layers:
        digest = str(layer.get("digest", "")) if isinstance(layer, dict) else ""
        if layer.get("mediaType") == OLLAMA_MODEL_LAYER and digest.startswith("sha256:"):
            blob = root / "blobs" / digest.replace(":", "-")
            return blob if blob.is_file() else None
    return None


def ollama_label(relative: Path) -> str:
    """registry.ollama.ai/library/llama3.2/1b → llama3.2:1b; other namespaces and registries kept."""
    parts = list(relative.parts)
    if len(parts) < 3:
        return ":".join(parts)
    *prefix, model, tag = parts
    if prefix and prefix[0] == DEFAULT_REGISTRY:
        prefix = prefix[1:]
    if prefix == ["library"]:
        prefix = []
    return "/".join([*prefix, model]) + f":{tag}"


def lm_studio_models() -> list[LocalGguf]:
    found = []
    for root in lm_studio_roots():
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.gguf")):
            if path.name.lower().startswith("mmproj") or not path.is_file():
                continue
            label = str(path.relative_to(root))
            found.append(describe(path, safe_name(path.stem), label, "LM Studio"))
    return found


def safe_name(text: str) -> str:
    return NAME_UNSAFE.sub("-", text).strip("-.") or "gguf-model"


def describe(path: Path, name: str, label: str, found_by: str) -> LocalGguf:
    try:
        summary = read_summary(path)
    except GgufRefused as exc:
        return LocalGguf(path, name, label, found_by, "?", "?", path.stat().st_size, 0, str(exc))
    try:
        check_summary(summary)
        refused = None
    except GgufRefused as exc:
        refused = str(exc)
    return LocalGguf(
        path,
        name,
        label,
        found_by,
        summary.model_architecture,
        summary.quantization,
        summary.size_bytes,
        summary.parameters,
        refused,
    )
