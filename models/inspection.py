"""The inspection model beside a prepared model: every layer's attention weights per head and the logit lens over
a whole token sequence, for the app's inside views and `python main.py explain` (models.inspection_export
builds it; runtime.inspection runs it). Decoding never uses it.

It is prepared lazily, the first time it is needed, from the same float32 weights the decoding model was
exported from (the kept GGUF of the default model, the source folder of a prepared HF folder), like every
preparation: in a child process that Cancel / Ctrl-C kill, built in a `.partial-…` folder and moved into
`<model>/inspection/` with os.replace, then recorded under "inspection" in the model's manifest.

    path = prepare_inspection(model_dir, progress=callback, cancel=event)   # instant when already prepared
    result = explain_sequence(model_dir, token_ids, prompt_length)        # a decoding.records.explain.ExplainResult
    explainer = Explainer(model_dir, device="auto")                       # or: open once, explain many
    result = explainer.explain(token_ids, prompt_length)
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from decoding.records.explain import ExplainResult, LogitLens, build_explain, check_length
from decoding.records.trace import ModelInfo
from models.catalog import read_manifest
from models.errors import PrepareError
from models.export_worker import INSPECTION_CHECK_NAME
from models.inspection_export import EXPORT_TASK, LENS_FILE, LENS_TOP_K, OUTPUTS
from models.manifest import file_entries, tool_versions, write_manifest
from models.open_model import model_identity
from models.prepare import build_folder, replace_folder, run_worker
from models.progress import CancelCheck, ProgressCallback, Stages
from runtime.model_files import attention_windows_from, read_json

INSPECTION_FOLDER = "inspection"
MODEL_FILE = "model.onnx"
# Bumped when the graph's inputs or outputs change; an inspection model of another format is prepared again.
# 2: the lens's lm_head, softmax and top K moved out of the graph into its own (LENS_FILE), run where read;
# the graph saved as ORT's basic optimisations leave it, its weights in model.onnx_data (models.optimized_graph).
INSPECTION_FORMAT = 2
# Expected seconds per stage (the default model, 2 cores): the progress bar's proportions.
PLAN = [("setup", 0.2), ("load", 25), ("export", 60), ("check", 5), ("install", 2)]


def inspection_model_path(model_dir: str | Path) -> Path:
    return Path(model_dir) / INSPECTION_FOLDER / MODEL_FILE


def inspection_is_prepared(model_dir: str | Path) -> bool:
    """True when the manifest records an inspection model of the current format and its files are all there
    with their recorded sizes."""
    record = read_manifest(model_dir).get("inspection") or {}
    files = record.get("files") or {}
    if record.get("format") != INSPECTION_FORMAT or not {MODEL_FILE, LENS_FILE} <= set(files):
        return False
    folder = Path(model_dir) / INSPECTION_FOLDER
    return all(
        (folder / name).is_file() and (folder / name).stat().st_size == info["size"] for name, info in files.items()
    )


def prepare_inspection(
    model_dir: str | Path,
    *,
    force: bool = False,
    progress: ProgressCallback | None = None,
    cancel: CancelCheck = None,
) -> Path:
    """Prepare the inspection model of the prepared model in `model_dir` (unless it already is, or `force`) and
    return its ONNX file. Progress and cancel as models.prepare; PrepareError / PrepareCancelled name the stage."""
    model_dir = Path(model_dir).expanduser().resolve()
    stages = Stages(PLAN, progress, cancel)
    path = inspection_model_path(model_dir)
    if not force and inspection_is_prepared(model_dir):
        stages.finish(f"already prepared: {path}")
        return path
    try:
        kind, weights = source_weights(model_dir)
    except FileNotFoundError as exc:
        raise PrepareError(
            "setup",
            f"cannot build the inspection model: {exc}. It needs the float32 weights the model was exported from: "
            "prepare the model from its GGUF (the default model) or from a local Hugging Face folder",
        ) from None
    with build_folder(INSPECTION_FOLDER, stages, root=model_dir) as build:
        worker = ["inspection", "--gguf" if kind == "gguf" else "--source", str(weights), "--out", str(build)]
        run_worker(worker, stages, f"{INSPECTION_FOLDER}-{model_dir.name}")
        with stages.stage("install", f"installing into {path.parent}"):
            check_file = build / INSPECTION_CHECK_NAME
            check = json.loads(check_file.read_text(encoding="utf-8"))
            check_file.unlink()
            record = inspection_record(build, {"kind": kind, "path": str(weights)}, check, dict(stages.seconds))
            stages.check_cancel()
            replace_folder(build, path.parent)
            manifest = read_manifest(model_dir)
            manifest["inspection"] = record
            write_manifest(model_dir, manifest)
    return path


def source_weights(model_dir: Path) -> tuple[str, Path]:
    """Where the prepared model's float32 weights can be loaded from, as ("gguf", file) or ("hf", folder): the
    kept GGUF of the default model, the source folder of a prepared HF folder (as the manifest records them).
    FileNotFoundError otherwise: hub downloads and registered ONNX folders keep no weights."""
    source = read_manifest(model_dir).get("source", {})
    if source.get("gguf") and (model_dir / source["gguf"]).is_file():
        return "gguf", model_dir / source["gguf"]
    if source.get("kind") == "hf-folder" and Path(source["path"]).is_dir():
        return "hf", Path(source["path"])
    raise FileNotFoundError(f"{model_dir} keeps no float32 weights (source: {source or 'unknown'})")


def inspection_record(build: Path, weights: dict, check: dict, stage_seconds: dict[str, float]) -> dict:
    """The manifest's "inspection" entry: what the files are, how they were made, and the check against
    transformers."""
    return {
        "format": INSPECTION_FORMAT,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "made_with": (
            f"optimum onnx_export_from_model, task {EXPORT_TASK}, eager attention; the model patcher's forward also "
            f"returns the logit lens's hidden states through the final norm; {LENS_FILE}: lm_head, softmax, top k; "
            "saved as ORT's basic optimisations leave it"
        ),
        "weights": weights,
        "outputs": list(OUTPUTS),
        "lens_top_k": LENS_TOP_K,
        "check": check,
        "tools": tool_versions(),
        "files": file_entries(build, {}),  # relative to the inspection folder
        "prepare_seconds": stage_seconds,
    }


class Explainer:
    """The inspection model of a prepared model, opened once on `device` (creating its session takes seconds)
    to explain any number of sequences. FileNotFoundError when it is not prepared (prepare_inspection first)."""

    def __init__(self, model_dir: str | Path, device: str = "auto"):
        from runtime.inspection import InspectionModel
        from runtime.tokenizer import Tokenizer

        self.model_dir = Path(model_dir)
        if not inspection_is_prepared(self.model_dir):
            raise FileNotFoundError(f"the inspection model of {self.model_dir} is not prepared (prepare_inspection)")
        self.inspector = InspectionModel(self.model_dir, device=device)
        self.tokenizer = Tokenizer.from_model_dir(self.model_dir)
        self.identity = explain_identity(self.model_dir)
        self.windows = attention_windows_from(read_json(self.model_dir / "config.json"))

    def explain(self, token_ids: list[int], prompt_length: int) -> ExplainResult:
        """`token_ids` (the first `prompt_length` are the prompt) through the model. ValueError for a sequence
        explain does not take (decoding.records.explain.check_length) or ids outside the vocabulary."""
        check_length(len(token_ids), self.inspector.max_positions)
        arrays = self.inspector.run(token_ids)
        lens = LogitLens.of_hidden(arrays.hidden, self.inspector.lens, self.tokenizer.piece, LENS_TOP_K)
        return build_explain(token_ids, prompt_length, arrays.attentions, lens, self.tokenizer, self.identity,
                             self.inspector.provider, self.windows)


def explain_sequence(
    model_dir: str | Path, token_ids: list[int], prompt_length: int, device: str = "auto"
) -> ExplainResult:
    """One sequence through the prepared inspection model of `model_dir` (see Explainer)."""
    return Explainer(model_dir, device).explain(token_ids, prompt_length)


def explain_identity(model_dir: Path) -> ModelInfo:
    """The model's identity as runs record it, plus the inspection model's hash ("inspection/model.onnx")."""
    manifest = read_manifest(model_dir)
    info = model_identity(model_dir, manifest)
    files = (manifest.get("inspection") or {}).get("files") or {}
    extra = {f"{INSPECTION_FOLDER}/{name}": entry["sha256"] for name, entry in sorted(files.items())}
    return ModelInfo(name=info.name, hashes=dict(sorted((info.hashes | extra).items())), path=info.path)
