"""models/graph_edits: the last-position lm_head slice, grouped-query attention without repeated KV heads and
each layer's attention fused into one ONNX Attention op leave every logit (and so every decision) within 1e-4 of
the exported graph, through prefill, fork, reorder, truncation and steps."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from models.graph_edits import EDITS, apply_edits, edited_model_dir
from runtime.decoder import OnnxDecoder


@pytest.fixture(scope="module")
def edited_dir(tiny_model_dir: Path, tmp_path_factory) -> Path:
    return edited_model_dir(tiny_model_dir, tmp_path_factory.mktemp("edited"), EDITS)


def test_edits_remove_the_repeated_kv_heads(tiny_model_dir: Path):
    model = onnx.load(str(tiny_model_dir / "model.onnx"))
    config = json.loads((tiny_model_dir / "config.json").read_text())
    before = sum(node.op_type == "Expand" for node in model.graph.node)
    applied, skipped = apply_edits(model, config, EDITS)
    assert applied == ["last_position_lm_head", "grouped_attention", "fused_attention"]
    assert skipped == {  # Gemma 3's edits: Llama's export has position_ids and no sliding window
        "position_ids_input": "the graph has a position_ids input already",
        "sliding_window_by_position": "no sliding-window layers (config.json layer_types)",
    }
    onnx.checker.check_model(model)
    assert before - sum(node.op_type == "Expand" for node in model.graph.node) == 2 * config["num_hidden_layers"]
    assert model.graph.output[0].type.tensor_type.shape.dim[1].dim_value == 1  # logits: last position only
    ops = [node.op_type for node in model.graph.node]
    assert ops.count("Attention") == config["num_hidden_layers"] and not {"Softmax", "IsNaN"} & set(ops)
    assert next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")) == 23


def test_edited_model_gives_the_same_logits(tiny_model_dir: Path, edited_dir: Path):
    original, edited = OnnxDecoder(tiny_model_dir, "cpu"), OnnxDecoder(edited_dir, "cpu")
    ids = [1, 40, 77, 5, 300, 12, 9, 64]
    (state_a, a), (state_b, b) = original.prefill(ids), edited.prefill(ids)
    np.testing.assert_allclose(a, b, atol=1e-4)
    rows, tokens = [0, 0, 0], [int(a.argmax()), 7, 8]
    for step in range(12):
        (state_a, a), (state_b, b) = original.step(state_a, rows, tokens), edited.step(state_b, rows, tokens)
        np.testing.assert_allclose(a, b, atol=1e-4)
        tokens, rows = a.argmax(-1).tolist(), ([2, 0, 1] if step % 2 else [0, 1, 2])


def test_edits_skip_a_graph_without_their_pattern(tiny_model_dir: Path, edited_dir: Path):
    """An already edited graph no longer has either pattern: both edits are skipped, with the reason, and the
    graph is left as it is."""
    model = onnx.load(str(edited_dir / "model.onnx"))
    config = json.loads((edited_dir / "config.json").read_text())
    before = model.SerializeToString()
    applied, skipped = apply_edits(model, config, EDITS)
    assert applied == [] and set(skipped) == set(EDITS)
    assert "dynamic sequence axis" in skipped["last_position_lm_head"]
    assert "0 repeat_kv chains found" in skipped["grouped_attention"]
    assert "0 grouped attention patterns found" in skipped["fused_attention"]
    assert model.SerializeToString() == before


def test_fused_attention_needs_the_grouped_graph(tiny_model_dir: Path):
    model = onnx.load(str(tiny_model_dir / "model.onnx"))
    config = json.loads((tiny_model_dir / "config.json").read_text())
    applied, skipped = apply_edits(model, config, ("fused_attention",))
    assert applied == [] and "0 grouped attention patterns found, expected one per layer" in skipped["fused_attention"]


def test_fused_attention_keeps_truncated_rows_and_chunked_prefill_exact(tiny_model_dir: Path, edited_dir: Path):
    """Rows with masked holes (a branch truncated to an earlier step) and a prompt read in odd chunks: the fused
    op reads the same boolean mask the export built."""
    original, edited = OnnxDecoder(tiny_model_dir, "cpu"), OnnxDecoder(edited_dir, "cpu", chunk=5)
    ids = [(13 * i) % 300 + 3 for i in range(23)]
    (state_a, a), (state_b, b) = original.prefill(ids), edited.prefill(ids)
    np.testing.assert_allclose(a, b, atol=1e-4)
    rows, tokens, lengths = [0, 0, 0], [4, 5, 6], [None, 9, 17]
    state_a, a = original.step(state_a, rows, tokens, lengths)
    state_b, b = edited.step(state_b, rows, tokens, lengths)
    np.testing.assert_allclose(a, b, atol=1e-4)
    (_, a), (_, b) = original.step(state_a, [2, 1], [7, 8]), edited.step(state_b, [2, 1], [7, 8])
    np.testing.assert_allclose(a, b, atol=1e-4)


def test_grouped_attention_skips_multi_head_attention(tiny_model_dir: Path):
    model = onnx.load(str(tiny_model_dir / "model.onnx"))
    config = json.loads((tiny_model_dir / "config.json").read_text())
    config["num_key_value_heads"] = config["num_attention_heads"]
    applied, skipped = apply_edits(model, config, ("grouped_attention",))
    assert applied == [] and skipped["grouped_attention"].startswith("not grouped-query attention")


def test_grouped_attention_skips_a_config_without_llama_attention_keys(tiny_model_dir: Path):
    """GPT-2 style configs (n_head, n_embd, n_layer) are skipped with a reason, not a KeyError."""
    model = onnx.load(str(tiny_model_dir / "model.onnx"))
    config = {"model_type": "gpt2", "n_head": 4, "n_embd": 64, "n_layer": 2}
    applied, skipped = apply_edits(model, config, ("grouped_attention",))
    assert applied == [] and "num_attention_heads" in skipped["grouped_attention"]
