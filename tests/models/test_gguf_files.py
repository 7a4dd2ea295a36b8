"""GGUF files: their headers read (models.gguf_file), the ones Branchpoint cannot prepare refused before any work and
in words, and the GGUFs ollama and LM Studio hold found without copying them (models.local_gguf)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from models.gguf_file import SUPPORTED_ARCHITECTURES, GgufRefused, check_preparable, read_summary


def write_gguf(path: Path, architecture: str = "llama", tokenizer: bool = True, name: str = "tiny", **extra) -> Path:
    """A small GGUF: one F32 and one Q8_0-sized tensor, a tokenizer model, the given architecture."""
    import gguf

    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_name(name)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    writer.add_uint32(f"{architecture}.context_length", 2048)
    if tokenizer:
        writer.add_tokenizer_model("llama")
        writer.add_token_list(["<unk>", "<s>", "</s>", "a"])
    for key, value in extra.items():
        writer.add_string(key, value)
    writer.add_tensor("token_embd.weight", np.zeros((4, 32), dtype=np.float32))
    writer.add_tensor("output_norm.weight", np.ones(32, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_header_names_architecture_quantization_size_and_parameters(tmp_path):
    path = write_gguf(tmp_path / "m.gguf", name="Tiny Llama")
    summary = check_preparable(path)
    assert (summary.architecture, summary.name, summary.quantization) == ("llama", "Tiny Llama", "Q8_0")
    assert (summary.parameters, summary.context_length, summary.size_bytes) == (4 * 32 + 32, 2048, path.stat().st_size)


def test_a_mistral_stored_as_llama_loads_as_transformers_loads_it(tmp_path):
    assert read_summary(write_gguf(tmp_path / "a.gguf", name="Mistral 7B v0.1")).model_architecture == "llama"
    assert read_summary(write_gguf(tmp_path / "b.gguf", name="mistral")).model_architecture == "mistral"


@pytest.mark.parametrize(
    ("architecture", "words"),
    [
        ("t5", "not a causal language model"),
        ("bert", "not a causal language model"),
        ("mamba", "without a KV cache"),
        ("qwen2moe", "mixture-of-experts"),
        ("glm4", "cannot load it from GGUF"),
        ("qwen35", "cannot load it from GGUF"),
    ],
)
def test_unsupported_architectures_are_refused_with_the_supported_list(tmp_path, architecture, words):
    path = write_gguf(tmp_path / "m.gguf", architecture)
    with pytest.raises(GgufRefused, match=words) as refused:
        check_preparable(path)
    assert ", ".join(SUPPORTED_ARCHITECTURES) in str(refused.value)


def test_a_truncated_file_is_refused(tmp_path):
    path = write_gguf(tmp_path / "m.gguf")
    data = path.read_bytes()
    (tmp_path / "cut.gguf").write_bytes(data[:-64])  # the tensor data cut short
    with pytest.raises(GgufRefused, match="truncated: its tensors end at byte"):
        check_preparable(tmp_path / "cut.gguf")
    (tmp_path / "header.gguf").write_bytes(data[:40])  # cut inside the metadata
    with pytest.raises(GgufRefused, match="truncated or damaged"):
        check_preparable(tmp_path / "header.gguf")


def test_a_file_that_is_not_gguf_is_refused(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    with pytest.raises(GgufRefused, match="is not a GGUF file"):
        check_preparable(tmp_path / "model.safetensors")
    with pytest.raises(GgufRefused, match="is not a file"):
        check_preparable(tmp_path / "missing.gguf")


def test_a_gguf_without_a_tokenizer_is_refused(tmp_path):
    with pytest.raises(GgufRefused, match="has no tokenizer"):
        check_preparable(write_gguf(tmp_path / "m.gguf", tokenizer=False))


def test_prepare_refuses_before_any_work(tmp_path, monkeypatch, capsys):
    """The command line says why, exits 2, and leaves nothing in the cache (no build folder, no worker)."""
    import main

    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path / "cache"))
    path = write_gguf(tmp_path / "enc.gguf", "t5")
    assert main.main(["prepare", "--gguf", str(path)]) == 2
    assert "not a causal language model" in capsys.readouterr().err
    assert not (tmp_path / "cache" / "models").exists() or not any((tmp_path / "cache" / "models").iterdir())


def ollama_store(root: Path, blob_source: Path, model: str = "llama3.2", tag: str = "1b") -> Path:
    digest = "sha256:" + "ab" * 32
    (root / "blobs").mkdir(parents=True)
    shutil.copyfile(blob_source, root / "blobs" / digest.replace(":", "-"))
    manifest = root / "manifests" / "registry.ollama.ai" / "library" / model / tag
    manifest.parent.mkdir(parents=True)
    layers = [
        {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "cd" * 32, "size": 10},
        {"mediaType": "application/vnd.ollama.image.model", "digest": digest, "size": blob_source.stat().st_size},
    ]
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": layers}), encoding="utf-8")
    return root


def test_ollama_and_lm_studio_models_are_found_with_what_their_headers_say(tmp_path, monkeypatch):
    from models.local_gguf import find_local_ggufs

    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "ollama"))
    ollama_store(tmp_path / "ollama", write_gguf(tmp_path / "a.gguf", "qwen2", name="Qwen2.5 0.5B"))
    lm_studio = home / ".lmstudio" / "models" / "bartowski" / "Phi-GGUF"
    lm_studio.mkdir(parents=True)
    write_gguf(lm_studio / "Phi-Q8_0.gguf", "phi3", name="Phi")
    write_gguf(lm_studio / "mmproj-Phi-f16.gguf", "clip")  # a vision projector, not a model
    write_gguf(lm_studio / "Enc.gguf", "t5", name="T5")
    found = find_local_ggufs()
    assert [(f.found_by, f.label, f.architecture, f.quantization, f.preparable) for f in found] == [
        ("LM Studio", "bartowski/Phi-GGUF/Enc.gguf", "t5", "Q8_0", False),
        ("LM Studio", "bartowski/Phi-GGUF/Phi-Q8_0.gguf", "phi3", "Q8_0", True),
        ("ollama", "llama3.2:1b", "qwen2", "Q8_0", True),
    ]
    ollama = found[-1]
    assert ollama.name == "llama3.2-1b" and ollama.path.parent == tmp_path / "ollama" / "blobs"
    assert ollama.size_bytes == ollama.path.stat().st_size
    assert "not a causal language model" in found[0].refused
    assert not list((tmp_path / "ollama" / "blobs").glob("*.gguf"))  # nothing copied or converted


def test_an_ollama_manifest_without_its_blob_is_skipped(tmp_path, monkeypatch):
    from models.local_gguf import find_local_ggufs

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "ollama"))
    root = ollama_store(tmp_path / "ollama", write_gguf(tmp_path / "a.gguf"))
    for blob in (root / "blobs").iterdir():
        blob.unlink()
    assert find_local_ggufs() == []


def test_a_name_that_cannot_be_a_folder_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    import main

    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path / "cache"))
    path = write_gguf(tmp_path / "m.gguf")
    assert main.main(["prepare", "--gguf", str(path), "--name", "../escape"]) == 2
    assert "cannot be a folder name in the cache" in capsys.readouterr().err
    assert not (tmp_path / "cache" / "models").exists()
