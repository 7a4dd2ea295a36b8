"""Logits at every position of one whole sequence, in one call: what a teacher-forced comparison reads.

A prepared model's graph slices the last position before lm_head (models.graph_edits `last_position_lm_head`).
This opens the same graph with that slice taken out (edited in memory and handed to ONNX Runtime as bytes, its
weights read from the model's folder) and runs a sequence with an empty KV cache: logits [T, vocab] for
positions 0 … T − 1. Graphs without the slice (registered as is) run unchanged.

With `layers=True` the graph also returns each decoder layer's output (the residual stream after the layer, the
last top-level Add of `/model/layers.N/`): `scorer.last_layers` [L, T, D] after a call, what the model-comparison
view's per-layer chart compares between two precisions.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from runtime.session import create_session

LAST_POSITION_NODE = "bp_last_position"
LAYER_ADD = re.compile(r"^/model/layers\.(\d+)/Add(_\d+)?$")
MODEL_FILE = "model.onnx"


def all_positions_graph(model_dir: Path):
    """model.onnx of model_dir (weights left external) with the last-position slice before lm_head removed."""
    import onnx

    model = onnx.load(str(model_dir / MODEL_FILE), load_external_data=False)
    graph = model.graph
    node = next((n for n in graph.node if n.name == LAST_POSITION_NODE), None)
    if node is None:
        return model
    source, sliced = node.input[0], node.output[0]
    for other in graph.node:
        for index, name in enumerate(other.input):
            if name == sliced:
                other.input[index] = source
    graph.node.remove(node)
    logits = next(o for o in graph.output if o.name == "logits")
    dim = logits.type.tensor_type.shape.dim[1]
    dim.Clear()
    dim.dim_param = "sequence_length"
    return model


def layer_outputs(graph) -> list[str]:
    """Each decoder layer's output tensor, layer by layer: the last top-level Add of `/model/layers.N/` (optimum's
    export: the residual added after the MLP). Empty when the graph names its nodes otherwise."""
    last: dict[int, str] = {}
    for node in graph.node:
        match = LAYER_ADD.match(node.name)
        if match:
            last[int(match.group(1))] = node.output[0]
    return [last[i] for i in sorted(last)] if sorted(last) == list(range(len(last))) else []


def expose_layers(model) -> list[str]:
    """Add every layer's output to the graph's outputs; their names (ValueError when none are found)."""
    from onnx import TensorProto, helper

    names = layer_outputs(model.graph)
    if not names:
        raise ValueError("the graph's decoder layers are not named /model/layers.N/…: no per-layer states")
    model.graph.output.extend(helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names)
    return names


class SequenceScorer:
    """A model's logits at every position of a sequence: `scorer(ids)` → float32 [len(ids), vocab]; with
    `layers=True` also each layer's output, in `last_layers` [L, len(ids), D] after the call."""

    def __init__(self, model_dir: str | Path, device: str = "auto", threads: int | None = None,
                 layers: bool = False):
        model_dir = Path(model_dir).resolve()
        model = all_positions_graph(model_dir)
        self.layer_names = expose_layers(model) if layers else []
        self.last_layers: np.ndarray | None = None
        self.session, self.placement = create_session(model.SerializeToString(), device, threads,
                                                      external_data_dir=model_dir)
        self.inputs = {i.name: i for i in self.session.get_inputs()}

    def __call__(self, ids: list[int]) -> np.ndarray:
        length = len(ids)
        feed: dict[str, np.ndarray] = {
            "input_ids": np.array([ids], dtype=np.int64),
            "attention_mask": np.ones((1, length), dtype=np.int64),
        }
        if "position_ids" in self.inputs:
            feed["position_ids"] = np.arange(length, dtype=np.int64)[None, :]
        for name, arg in self.inputs.items():
            if name.startswith("past_key_values."):
                dtype = np.float16 if arg.type == "tensor(float16)" else np.float32
                feed[name] = np.zeros((1, arg.shape[1], 0, arg.shape[3]), dtype=dtype)
        logits, *layers = self.session.run(["logits", *self.layer_names], feed)
        if layers:
            self.last_layers = np.stack([np.asarray(h[0], dtype=np.float32) for h in layers])
        return np.asarray(logits[0], dtype=np.float32)
