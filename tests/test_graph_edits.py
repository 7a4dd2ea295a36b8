"""bench/graph_edits: the last-position lm_head slice and grouped-query attention without repeated KV heads
leave every logit (and so every decision) within 1e-4 of the exported graph, through prefill, fork, reorder
and steps."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from bench.graph_edits import EDITS, apply_edits, edited_model_dir
from runtime.decoder import OnnxDecoder


@pytest.fixture(scope="module")
def edited_dir(tiny_model_dir: Path, tmp_path_factory) -> Path:
    return edited_model_dir(tiny_model_dir, tmp_path_factory.mktemp("edited"), EDITS)


def test_edits_remove_the_repeated_kv_heads(tiny_model_dir: Path):
    model = onnx.load(str(tiny_model_dir / "model.onnx"))
    config = json.loads((tiny_model_dir / "config.json").read_text())
    before = sum(node.op_type == "Expand" for node in model.graph.node)
    apply_edits(model, config, EDITS)
    onnx.checker.check_model(model)
    assert before - sum(node.op_type == "Expand" for node in model.graph.node) == 2 * config["num_hidden_layers"]
    assert model.graph.output[0].type.tensor_type.shape.dim[1].dim_value == 1  # logits: last position only


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
