"""The inspection model on the tiny random-weight Llama: prepared lazily and atomically beside a prepared model
(manifest record, instant second time, a cancel keeps the previous one, a clear error without weights), its outputs
equal transformers' (eager attention, hidden states through the final norm and lm_head), its last lens row is
the decoding model's own distribution, and `main.py explain` writes JSON that reads back, or answers bad input
with one line and exit code 2."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

import main
from decoding.records.explain import ExplainResult
from models import inspection, prepare
from models.catalog import read_manifest
from models.errors import PrepareCancelled, PrepareError
from runfiles import run_file
from runtime.decoder import OnnxDecoder
from runtime.inspection import InspectionModel
from runtime.tokenizer import Tokenizer
from tests.reference import attention_and_lens, load_eager_reference

SENTENCES = ["Although I was tired, I still decided to go for a walk.", "我虽然很累，但还是决定出去散步。"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    with pytest.MonkeyPatch.context() as patch:
        root = tmp_path_factory.mktemp("inspect-cache")
        patch.setenv("BRANCHPOINT_CACHE_DIR", str(root))
        yield root


@pytest.fixture(scope="module")
def prepared(cache, tiny_hf_dir) -> tuple[Path, list]:
    """A prepared tiny model with its inspection model, and the progress events of preparing the latter."""
    model_dir = prepare.prepare_hf_folder(tiny_hf_dir, name="tiny-inspect")
    events: list[tuple[str, float, str]] = []
    inspection.prepare_inspection(model_dir, progress=lambda *event: events.append(event))
    return model_dir, events


@pytest.fixture(scope="module")
def reference(tiny_hf_dir):
    return load_eager_reference(tiny_hf_dir)


@pytest.fixture(scope="module")
def tokenizer(prepared) -> Tokenizer:
    return Tokenizer.from_model_dir(prepared[0])


def sequences(tokenizer: Tokenizer) -> list[list[int]]:
    chat = tokenizer.encode_chat(SENTENCES[1], "Be brief.")
    return [tokenizer.encode(SENTENCES[0]), tokenizer.encode(SENTENCES[1]), chat, [7]]


def test_prepare_records_the_inspection_model_and_second_call_is_instant(prepared):
    model_dir, events = prepared
    path = model_dir / "inspection" / "model.onnx"
    assert path.is_file() and inspection.inspection_is_prepared(model_dir)
    assert [name for name in dict.fromkeys(stage for stage, _, _ in events)] == [
        "setup",
        "load",
        "export",
        "check",
        "install",
    ]
    fractions = [fraction for _, fraction, _ in events]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0)
    assert sorted(p.name for p in model_dir.iterdir() if p.name.startswith(".")) == []
    record = read_manifest(model_dir)["inspection"]
    assert record["format"] == inspection.INSPECTION_FORMAT
    assert record["weights"]["kind"] == "hf" and record["lens_top_k"] == 10
    assert record["outputs"] == ["attentions", "lens_hidden"]
    assert sorted(record["files"]) == ["lens.onnx", "lens.onnx_data", "model.onnx", "model.onnx_data"]
    assert record["files"]["model.onnx"]["size"] == path.stat().st_size
    assert record["check"]["attention_max_abs_diff"] < 1e-4 and record["check"]["lens_prob_max_abs_diff"] < 1e-3
    assert {"load", "export", "check"} <= set(record["prepare_seconds"])
    assert "optimum" in record["made_with"] and "transformers" in record["tools"]
    assert read_manifest(model_dir)["smoke_test"]  # the decoding model's record is kept

    messages: list[str] = []
    assert inspection.prepare_inspection(model_dir, progress=lambda s, f, m: messages.append(m)) == path
    assert messages == [f"already prepared: {path}"]


def test_outputs_equal_transformers(prepared, reference, tokenizer):
    inspector = InspectionModel(prepared[0], device="cpu")
    for ids in sequences(tokenizer):
        arrays = inspector.run(ids)
        attentions, probs = attention_and_lens(reference, ids)
        assert arrays.attentions.shape == attentions.shape == (2, 4, len(ids), len(ids))
        assert np.abs(arrays.attentions - attentions).max() < 1e-4
        assert arrays.hidden.shape[:2] == (3, len(ids))
        lens_ids, lens_probs = inspector.lens(arrays.hidden)
        assert lens_ids.shape == lens_probs.shape == (3, len(ids), 10)
        assert np.abs(np.take_along_axis(probs, lens_ids, -1) - lens_probs).max() < 1e-3
        best = -np.sort(-probs, axis=-1)[..., :10]  # the lens holds the 10 best, best first
        assert np.abs(best - lens_probs).max() < 1e-3
        last_ids, last_probs = inspector.lens(arrays.hidden[:, -1])  # one position: the same numbers
        assert np.array_equal(last_ids, lens_ids[:, -1]) and np.abs(last_probs - lens_probs[:, -1]).max() < 1e-6


def test_attention_rows_are_distributions_over_earlier_positions(prepared, tokenizer):
    ids = tokenizer.encode_chat(SENTENCES[1])
    attentions = InspectionModel(prepared[0], device="cpu").run(ids).attentions
    rows, columns = np.triu_indices(len(ids), 1)
    assert np.all(attentions[..., rows, columns] == 0)
    assert np.all(attentions >= 0)
    assert np.abs(attentions.sum(axis=-1) - 1).max() < 1e-5


def test_last_lens_row_is_the_decoding_models_distribution(prepared, tokenizer):
    ids = tokenizer.encode(SENTENCES[0])
    inspector = InspectionModel(prepared[0], device="cpu")
    lens_ids, lens_probs = inspector.lens(inspector.run(ids).hidden[-1])
    decoder = OnnxDecoder(prepared[0], device="cpu")
    for position in (0, len(ids) // 2, len(ids) - 1):
        _, logits = decoder.prefill(ids[: position + 1])
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        assert np.abs(probs[lens_ids[position]] - lens_probs[position]).max() < 1e-5
        assert np.abs(-np.sort(-probs)[:10] - lens_probs[position]).max() < 1e-5


def test_a_cancelled_preparation_leaves_the_previous_one(prepared):
    """Cancel kills the worker at once; the build folder goes, the installed inspection model and its record
    stay as they were."""
    model_dir = prepared[0]
    before = read_manifest(model_dir)
    cancel = threading.Event()

    def progress(stage: str, fraction: float, message: str) -> None:
        if stage == "load":
            cancel.set()

    with pytest.raises(PrepareCancelled, match="prepare cancelled at stage 'load'"):
        inspection.prepare_inspection(model_dir, force=True, progress=progress, cancel=cancel)
    assert sorted(p.name for p in model_dir.iterdir() if p.is_dir()) == ["inspection"]
    assert read_manifest(model_dir) == before and inspection.inspection_is_prepared(model_dir)


def test_a_model_without_weights_names_what_is_missing(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path / "cache"))
    model_dir = prepare.register_onnx_folder(tiny_model_dir, name="tiny-onnx")
    with pytest.raises(PrepareError, match=r"stage 'setup': cannot build the inspection model: .* keeps no float32"):
        inspection.prepare_inspection(model_dir)
    with pytest.raises(FileNotFoundError, match="inspection model of .* is not prepared"):
        inspection.explain_sequence(model_dir, [1, 2], 2)


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main.main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_explain_writes_json_that_reads_back(prepared, tokenizer, capsys, tmp_path):
    model_dir = prepared[0]
    path = tmp_path / "explain.json"
    args = ["--model", str(model_dir), "--device", "cpu", "--json", str(path)]
    code, out, err = cli(capsys, "explain", "--prompt", SENTENCES[1], "--continuation", " and it rained", *args)
    assert code == 0, err
    assert out.splitlines()[0].startswith("tiny-inspect · CPUExecutionProvider · ")
    text = path.read_text(encoding="utf-8")
    result = ExplainResult.from_json(text)
    assert result.to_json() == text
    prompt_ids = tokenizer.encode(SENTENCES[1])
    ids = prompt_ids + tokenizer.encode(" and it rained", add_special_tokens=False)
    assert [t.id for t in result.tokens] == ids and result.prompt_length == len(prompt_ids)
    assert b"".join(bytes(t.bytes) for t in result.tokens).decode("utf-8") == SENTENCES[1] + " and it rained"
    assert result.model.name == "tiny-inspect" and "inspection/model.onnx" in result.model.hashes
    expected = inspection.explain_sequence(model_dir, ids, len(prompt_ids), device="cpu")
    assert json.loads(result.to_json()) == json.loads(expected.to_json())

    code, _, err = cli(capsys, "explain", "--prompt", "hi", "--chat", "--system", "Be brief.", *args)
    assert code == 0, err
    result = run_file.load_explain(path)
    assert [t.id for t in result.tokens] == tokenizer.encode_chat("hi", "Be brief.")
    assert result.tokens[0].text == "<|im_start|>"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--prompt", " "], "invalid --prompt: it is empty"),
        (["--prompt", "a b " * 300], "tokens; explain takes 1 to 256 (attention weights grow as tokens squared)"),
        (["--prompt", "x", "--json", "/nonexistent/e.json"], "cannot write '/nonexistent/e.json'"),
        (["--prompt", "x", "--model", "no-such-model"], "no prepared model named or at 'no-such-model'"),
        (["--prompt", "x", "--system", "s"], "--system needs --chat"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(prepared, capsys, tmp_path, args, message):
    argv = ["explain", "--model", str(prepared[0]), "--json", str(tmp_path / "e.json"), *args]
    code, out, err = cli(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and message in err, err
    assert not (tmp_path / "e.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["gpt2", "qwen2"])
def test_other_architectures_get_an_inspection_model(tiny_hf_dir, tmp_path, monkeypatch, kind):
    """GPT-2 (final norm `ln_f`, learned positions) and Qwen2 folders: the inspection model equals transformers."""
    import torch
    from transformers import AutoTokenizer

    from tests.models.test_prepare import tiny_causal_lm

    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / kind
    tiny_causal_lm(kind).save_pretrained(folder)
    AutoTokenizer.from_pretrained(tiny_hf_dir).save_pretrained(folder)
    model_dir = prepare.prepare_hf_folder(folder)
    inspection.prepare_inspection(model_dir)
    ids = Tokenizer.from_model_dir(model_dir).encode(SENTENCES[1])
    result = inspection.explain_sequence(model_dir, ids, len(ids), device="cpu")
    reference = load_eager_reference(folder)
    norm = reference.transformer.ln_f if kind == "gpt2" else reference.model.norm
    with torch.no_grad():
        out = reference(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
        rows = [norm(h) for h in out.hidden_states[:-1]] + [out.hidden_states[-1]]
        probs = torch.stack([torch.softmax(reference.lm_head(h)[0], -1) for h in rows]).numpy()
        assert torch.allclose(reference.lm_head(out.hidden_states[-1]), out.logits, atol=1e-5)
    assert np.abs(result.attention - torch.cat(out.attentions).numpy()).max() < 1e-4
    assert np.abs(np.take_along_axis(probs, result.lens_ids, -1) - result.lens_probs).max() < 1e-3
