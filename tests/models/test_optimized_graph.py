"""The prepared model's load layout (models.optimized_graph): ORT's basic-level graph with the weights beside it,
the same logits bit for bit, written deterministically; prepare writes it, and migrates folders prepared with
earlier manifest schemas to it without exporting again (schema 2: optimised; schema 3: the fused attention edit
added)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from models import catalog, prepare
from models.optimized_graph import WEIGHTS_FILE, save_optimized_graph
from runtime.decoder import OnnxDecoder

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(root))
    return root


def optimized_copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    save_optimized_graph(target)
    return target


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def decode(decoder: OnnxDecoder) -> list[np.ndarray]:
    """Logits of a prefill and of steps that fork, reorder, truncate and drop rows."""
    state, first = decoder.prefill([5, 17, 42, 99, 7, 130])
    out = [first]
    for rows, tokens, lengths in (
        ([0, 0, 0], [3, 4, 5], None),
        ([2, 0, 1], [6, 7, 8], [4, None, 5]),
        ([1, 1], [9, 10], None),
    ):
        state, logits = decoder.step(state, rows, tokens, lengths)
        out.append(logits)
    return out


def test_optimized_layout_gives_the_same_logits_bit_for_bit(tiny_model_dir, tmp_path):
    optimized = optimized_copy(tiny_model_dir, tmp_path / "optimized")
    assert (optimized / WEIGHTS_FILE).stat().st_size > 0
    assert (optimized / "model.onnx").stat().st_size < (tiny_model_dir / "model.onnx").stat().st_size / 4
    assert not (optimized / ".optimized").exists()
    graph = onnx.load(str(optimized / "model.onnx"), load_external_data=False).graph
    assert {node.domain for node in graph.node} <= {"", "ai.onnx"}  # standard ops only: any EP runs it
    original, fast = OnnxDecoder(tiny_model_dir, "cpu"), OnnxDecoder(optimized, "cpu")
    assert [i.name for i in fast.session.get_inputs()] == [i.name for i in original.session.get_inputs()]
    for expected, got in zip(decode(original), decode(fast), strict=True):
        np.testing.assert_array_equal(got, expected)


def test_optimized_layout_is_written_deterministically(tiny_model_dir, tmp_path):
    first = optimized_copy(tiny_model_dir, tmp_path / "a")
    second = optimized_copy(tiny_model_dir, tmp_path / "b")
    for name in ("model.onnx", WEIGHTS_FILE):
        assert sha256(first / name) == sha256(second / name)
    save_optimized_graph(second)  # optimising the optimised graph again changes no logits
    for expected, got in zip(decode(OnnxDecoder(first, "cpu")), decode(OnnxDecoder(second, "cpu")), strict=True):
        np.testing.assert_array_equal(got, expected)


def test_graph_with_the_lm_head_edit_binds_prefill_logits_to_the_host(tiny_model_dir, tmp_path):
    from models.graph_edits import edited_model_dir

    edited = OnnxDecoder(edited_model_dir(tiny_model_dir, tmp_path / "edited", ("last_position_lm_head",)), "cpu")
    plain = OnnxDecoder(tiny_model_dir, "cpu")
    assert edited.io.logits_last_position_only and not plain.io.logits_last_position_only
    ids = [5, 17, 42, 99, 7, 130]
    np.testing.assert_allclose(edited.prefill(ids)[1], plain.prefill(ids)[1], atol=1e-5, rtol=0)


def as_schema_2(path: Path, raw_export: Path) -> dict:
    """Turn a prepared folder back into what the previous schema installed: model.onnx in one file (the raw
    export stands in for it), manifest schema 2 with the file sizes and hashes; an inspection record to carry."""
    (path / WEIGHTS_FILE).unlink()
    shutil.copy2(raw_export / "model.onnx", path / "model.onnx")
    manifest = catalog.read_manifest(path)
    manifest["schema_version"] = 2
    del manifest["graph_optimization"]
    manifest["files"] = {
        p.name: {"size": p.stat().st_size, "sha256": sha256(p)}
        for p in sorted(path.iterdir())
        if p.is_file() and p.name != "manifest.json"
    }
    (path / "inspection").mkdir()
    (path / "inspection" / "model.onnx").write_bytes(b"inspection stand-in")
    manifest["inspection"] = {"format": 1, "files": {"model.onnx": {"size": 19}}}
    (path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return manifest


def test_a_schema_2_folder_is_migrated_without_a_new_export(cache, tiny_hf_dir, tiny_model_dir):
    path = prepare.prepare_hf_folder(tiny_hf_dir, name="tiny-hf")
    manifest = catalog.read_manifest(path)
    assert manifest["schema_version"] == catalog.SCHEMA_VERSION == 4
    assert manifest["graph_optimization"] == "basic" and WEIGHTS_FILE in manifest["files"]
    old = as_schema_2(path, tiny_model_dir)
    assert catalog.needs_migration(path) and not catalog.manifest_is_valid(path)

    # still usable as it is; the command line says how to update it
    done = subprocess.run(
        [sys.executable, "main.py", "run", "--prompt", "Hi", "--max-new-tokens", "2", "--model", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "was prepared by an older Branchpoint; `prepare` it again" in done.stderr

    stages: list[str] = []
    assert prepare.prepare_hf_folder(tiny_hf_dir, name="tiny-hf", progress=lambda s, f, m: stages.append(s)) == path
    assert "export" not in stages and {"copy", "optimize", "smoke-test", "install"} <= set(stages)
    migrated = catalog.read_manifest(path)
    assert catalog.manifest_is_valid(path) and not catalog.needs_migration(path)
    assert migrated["graph_optimization"] == "basic" and (path / WEIGHTS_FILE).is_file()
    for key in ("source", "graph_edits", "graph_edits_skipped", "inspection", "prepare_seconds"):
        assert migrated[key] == old[key], key
    assert migrated["migrated"]["from_schema"] == 2 and migrated["migrated"]["prepared"] == old["created"]
    assert (path / "inspection" / "model.onnx").read_bytes() == b"inspection stand-in"
    for name in ("tokenizer.json", "config.json"):
        assert migrated["files"][name] == old["files"][name]
    assert sorted(p.name for p in (cache / "models").iterdir()) == ["tiny-hf"]  # no build folder left
    np.testing.assert_array_equal(decode(OnnxDecoder(path, "cpu"))[-1], decode(OnnxDecoder(tiny_model_dir, "cpu"))[-1])


def test_only_an_intact_schema_2_export_is_migrated(cache, tiny_model_dir, tiny_hf_dir):
    registered = prepare.register_onnx_folder(tiny_model_dir, name="tiny")
    assert catalog.read_manifest(registered)["graph_optimization"] == "none"
    assert not (registered / WEIGHTS_FILE).exists()  # registered as is
    manifest = catalog.read_manifest(registered)
    manifest["schema_version"] = 2
    (registered / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert not catalog.needs_migration(registered)  # registered again (a copy), not migrated

    path = prepare.prepare_hf_folder(tiny_hf_dir, name="tiny-hf")
    as_schema_2(path, tiny_model_dir)
    (path / "tokenizer.json").write_text("{}", encoding="utf-8")  # a file changed since: prepared again
    assert not catalog.needs_migration(path)
    manifest = catalog.read_manifest(path)
    manifest["schema_version"] = 1
    (path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert not catalog.needs_migration(path)


def as_schema_3(path: Path, tiny_model_dir: Path, tmp_path: Path) -> dict:
    """Turn a prepared folder back into what schema 3 installed: the optimised graph with the lm_head and grouped
    attention edits only, manifest schema 3 with its file sizes."""
    from models.graph_edits import edited_model_dir

    older = optimized_copy(edited_model_dir(tiny_model_dir, tmp_path / "older", EDITS_BEFORE_4), tmp_path / "opt")
    for name in ("model.onnx", WEIGHTS_FILE):
        (path / name).unlink()
        shutil.copy2(older / name, path / name)
    manifest = catalog.read_manifest(path)
    manifest.update(schema_version=3, graph_edits=list(EDITS_BEFORE_4))
    manifest["files"] = {p.name: {"size": p.stat().st_size, "sha256": sha256(p)}
                         for p in sorted(path.iterdir()) if p.is_file() and p.name != "manifest.json"}
    (path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return manifest


EDITS_BEFORE_4 = ("last_position_lm_head", "grouped_attention")


def test_a_schema_3_folder_gets_the_fused_attention_edit_without_a_new_export(cache, tiny_hf_dir, tiny_model_dir,
                                                                              tmp_path):
    path = prepare.prepare_hf_folder(tiny_hf_dir, name="tiny-hf")
    expected = decode(OnnxDecoder(path, "cpu"))[-1]
    as_schema_3(path, tiny_model_dir, tmp_path)
    assert catalog.needs_migration(path)
    stages: list[str] = []
    prepare.prepare_hf_folder(tiny_hf_dir, name="tiny-hf", progress=lambda s, f, m: stages.append(s))
    assert "export" not in stages and "graph-edits" in stages
    migrated = catalog.read_manifest(path)
    assert catalog.manifest_is_valid(path) and migrated["migrated"]["from_schema"] == 3
    assert migrated["graph_edits"] == [*EDITS_BEFORE_4, "fused_attention"]
    ops = [node.op_type for node in onnx.load(str(path / "model.onnx"), load_external_data=False).graph.node]
    assert ops.count("Attention") == 2 and "Softmax" not in ops  # the tiny model's 2 layers
    np.testing.assert_allclose(decode(OnnxDecoder(path, "cpu"))[-1], expected, atol=1e-5, rtol=0)
