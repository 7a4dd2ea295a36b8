"""runtime/lean_graph on the prepared tiny model: the head splits and merges get constant shapes, the rotary
embedding becomes one RotaryEmbedding per q and k on the CPU (not on CUDA's graph), nothing else changes what the
graph computes (logits as without the edits, through prefill and steps), and near-misses of the patterns are left
alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

import runtime.in_place_kv as in_place_kv
from models.graph_edits import EDITS, edited_model_dir
from runtime.decoder import OnnxDecoder
from runtime.in_place_kv import in_place_graph
from runtime.lean_graph import Links, constant_reshapes, lean_graph, rotary_embedding, rotary_half

LAYERS = 2


@pytest.fixture(scope="module")
def edited_dir(tiny_model_dir: Path, tmp_path_factory) -> Path:
    return edited_model_dir(tiny_model_dir, tmp_path_factory.mktemp("edited"), EDITS)


def ops(model) -> list[str]:
    return [node.op_type for node in model.graph.node]


@pytest.mark.parametrize("cpu", [True, False])
def test_the_in_place_graph_is_lean(edited_dir: Path, cpu: bool):
    graph = in_place_graph(edited_dir, cpu=cpu)
    onnx.checker.check_model(graph)
    producers = Links(graph.graph).producers
    head_reshapes = [n for n in graph.graph.node if n.op_type == "Reshape" and "self_attn" in n.name]
    assert head_reshapes and all(producers.get(n.input[1]) is None for n in head_reshapes)  # constants
    assert ops(graph).count("RotaryEmbedding") == (2 * LAYERS if cpu else 0)
    assert ("Neg" in ops(graph)) != cpu  # rotate_half's negation is inside the op


def test_lean_logits_are_the_full_graphs(edited_dir: Path, monkeypatch):
    lean = OnnxDecoder(edited_dir, "cpu")
    monkeypatch.setattr(in_place_kv, "lean_graph", lambda model, config, cpu: {})
    full = OnnxDecoder(edited_dir, "cpu")
    ids = [(13 * i) % 300 + 3 for i in range(19)]
    (a_state, a), (b_state, b) = lean.prefill(ids), full.prefill(ids)
    np.testing.assert_allclose(a, b, atol=1e-5)
    for _ in range(6):
        token = int(np.argmax(a))
        assert token == int(np.argmax(b))
        (a_state, a), (b_state, b) = lean.step(a_state, [0], [token]), full.step(b_state, [0], [token])
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_near_misses_are_left_alone(edited_dir: Path):
    """A head split whose batch length is read off dimension 1, and a rotate_half that splits at 1 instead of at its
    half: neither pattern holds, neither is replaced."""
    from onnx import numpy_helper

    model = onnx.load(str(edited_dir / "model.onnx"), load_external_data=False)
    graph = model.graph
    producers = Links(graph).producers
    reshape = next(n for n in graph.node if n.op_type == "Reshape" and n.name.endswith("self_attn/Reshape"))
    batch = producers[producers[producers[reshape.input[1]].input[0]].input[0]]  # Concat ← Unsqueeze ← Gather
    graph.initializer.append(numpy_helper.from_array(np.array(1, np.int64), "bp_test_one"))
    batch.input[1] = "bp_test_one"
    before = constant_reshapes(onnx.load(str(edited_dir / "model.onnx"), load_external_data=False).graph)
    assert constant_reshapes(graph) < before and producers[reshape.input[1]].op_type == "Concat"

    model = onnx.load(str(edited_dir / "model.onnx"), load_external_data=False)
    neg = next(n for n in model.graph.node if n.op_type == "Neg")
    upper = Links(model.graph).producer(neg.input[0])  # x[..., half:]
    model.graph.initializer.append(numpy_helper.from_array(np.array([1], np.int64), "bp_test_start"))
    upper.input[1] = "bp_test_start"
    assert rotary_embedding(model.graph, rotary_half(config(edited_dir))) == 2 * LAYERS - 1


def config(model_dir: Path) -> dict:
    import json

    return json.loads((model_dir / "config.json").read_text())


def test_partial_rotation_is_not_replaced():
    assert rotary_half({"num_attention_heads": 4, "hidden_size": 64}) == 8
    assert rotary_half({"num_attention_heads": 4, "hidden_size": 64, "partial_rotary_factor": 0.5}) is None
    assert rotary_half({"head_dim": 7}) is None


def test_counts_are_reported(edited_dir: Path):
    model = onnx.load(str(edited_dir / "model.onnx"), load_external_data=False)
    counts = lean_graph(model, config(edited_dir), cpu=True)
    assert counts == {"constant_reshapes": 4 * LAYERS, "rotary_embedding": 2 * LAYERS}
