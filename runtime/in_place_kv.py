"""The decoder's graph with a KV cache written in place: a step stops copying the whole cache.

The export grows each layer's cache by `present = Concat(past, new)`: every step reads and writes the whole
cache again (176 MB per step at 4,000 tokens on the default model, a third of a step's time). Here, in memory at
load time, each such Concat becomes an ONNX `TensorScatter` (opset 24) that writes the new keys and values into
`past` at `kv_write_index` (one position per row), and each layer's `Attention` reads the whole buffer under a
mask given as an input, `kv_attention_mask` [rows, 1, S, capacity] (boolean, True = attend; additive on the CPU,
below), instead of the mask the export derives from `attention_mask` for a Concat-grown cache. Binding a present
output to the very buffer bound to its past input, ONNX Runtime's TensorScatter writes in place (no copy; CPU and
CUDA kernels alike).

Two more load-time edits serve ONNX Runtime's CPU `Attention` kernel (measured on the default model, 2 cores):
- Every layer's query is multiplied by the attention scale before the op (whose scale becomes 1): MLAS takes its
  one-row GEMM kernel, which reads the keys where they are, only for a scale of 1; with any other scale it first
  packs (copies) every head's keys, which made a step at context 4,000 ~8 % slower. On every device.
- On the CPU the mask is additive float32 (0 = attend, float32's lowest = masked: the values the kernel makes of
  a boolean mask, so logits are bit-identical): the kernel converts a boolean mask element by element in every
  layer of every run, ~5 % of a 4,000-token prefill.

Gemma 3's sliding-window layers read a mask of their own (models.graph_edits.sliding_window_by_position: the
global mask And query position − key position < window). In place they read a second input,
`kv_sliding_attention_mask`, of the same shape and type, which the caller makes from the first with
`window_mask` (positions known to the cache, or to the knock-out); the window is recorded in the graph's
metadata (`branchpoint.sliding_window`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from runtime.lean_graph import drop_dead, lean_graph
from runtime.model_files import read_json

WRITE_INDEX = "kv_write_index"
ATTENTION_MASK = "kv_attention_mask"
SLIDING_MASK = "kv_sliding_attention_mask"
WINDOW_KEY = "branchpoint.sliding_window"
SLIDING_SOURCE = "bp_window_mask"  # the sliding layers' mask made by models.graph_edits.sliding_window_by_position
SCATTER_OPSET = 24
MODEL_FILE = "model.onnx"
MASKED = np.finfo(np.float32).min  # what the CPU kernel makes of a False in a boolean mask


def in_place_graph(model_dir: Path, cpu: bool = True):
    """model.onnx of model_dir (weights left external) with its KV cache written in place and fewer nodes
    (runtime.lean_graph), or None when the graph is not the prepared pattern (each present a Concat of its past,
    each layer's Attention reading the presents). `cpu`: with the CPU kernel's additive mask (see the module
    docstring); else the boolean mask CUDA takes."""
    import onnx
    from google.protobuf.message import DecodeError

    try:
        model = onnx.load(str(model_dir / MODEL_FILE), load_external_data=False)
    except (DecodeError, OSError, ValueError):  # not a graph: ONNX Runtime's own load then says why, clearly
        return None
    if not _make_in_place(model, cpu):
        return None
    lean_graph(model, read_json(model_dir / "config.json"), cpu)
    return model


def in_place_mismatch(model) -> str | None:
    """Why the KV cache cannot be written in place in this graph (None when it can): each present must be a Concat
    of its past, and every layer's Attention must read the presents under one and the same mask — one mask
    `kv_attention_mask` replaces it — or, with Gemma 3's sliding-window layers, under the global mask and the
    window mask made from it by the sliding_window_by_position graph edit (`kv_sliding_attention_mask` replaces
    that one)."""
    graph = model.graph
    producers = {out: node for node in graph.node for out in node.output}
    presents = [o.name for o in graph.output if o.name.startswith("present.")]
    attention = [n for n in graph.node if n.op_type == "Attention"]
    if not presents or not attention:
        return "no fused Attention nodes over the presents (the fused_attention graph edit did not apply)"
    if not all(_is_past_concat(producers.get(name)) for name in presents):
        return "a present is not a Concat of its past"
    if any(n.input[1] not in presents or n.input[2] not in presents for n in attention):
        return "an Attention node reads keys or values other than the presents"
    sources = {_mask_source(n.input[3], producers) for n in attention}
    if len(sources) > 1 and (len(sources) > 2 or SLIDING_SOURCE not in sources or sliding_window(model) is None):
        return (
            "layers attend under different masks (sliding-window and global layers) and the sliding ones' is not "
            "the sliding_window_by_position graph edit's: one cache-wide mask cannot replace them"
        )
    return None


def sliding_window(model) -> int | None:
    """The window of the sliding_window_by_position graph edit (its `bp_window_window` constant), else None."""
    from onnx import numpy_helper

    found = next((i for i in model.graph.initializer if i.name == "bp_window_window"), None)
    return None if found is None else int(numpy_helper.to_array(found))


def window_mask(mask: np.ndarray, query_positions: np.ndarray, key_positions: np.ndarray, window: int) -> np.ndarray:
    """The sliding layers' mask: `mask` (bool [rows, 1, S, capacity]) And query position − key position < window,
    from each row's query positions [rows, S] and the position of each of its key slots [rows, capacity]."""
    distance = query_positions[:, None, :, None] - key_positions[:, None, None, :]
    return mask & (distance < window)


def _mask_source(name: str, producers: dict) -> str:
    """The mask an Attention node reads, seen through the per-layer Slice of it the export makes (each layer
    slices the one mask to its key length)."""
    node = producers.get(name)
    return node.input[0] if node is not None and node.op_type == "Slice" else name


def _make_in_place(model, cpu: bool) -> bool:
    from onnx import TensorProto, helper

    if in_place_mismatch(model) is not None:
        return False
    graph = model.graph
    window = sliding_window(model)
    producers = {out: node for node in graph.node for out in node.output}
    presents = [o.name for o in graph.output if o.name.startswith("present.")]
    concats = [producers.get(name) for name in presents]
    attention = [n for n in graph.node if n.op_type == "Attention"]
    scatters = {
        node.name: helper.make_node(
            "TensorScatter", [node.input[0], node.input[1], WRITE_INDEX], list(node.output),
            name=f"{node.name}_bp_in_place", mode="linear",
        )
        for node in concats
    }
    sliding = {n.name for n in attention if _mask_source(n.input[3], producers) == SLIDING_SOURCE}
    for node in attention:  # before the node list is rebuilt: extend() copies the nodes
        node.input[3] = SLIDING_MASK if node.name in sliding else ATTENTION_MASK
    nodes = [scatters.get(node.name, node) for node in graph.node]
    graph.ClearField("node")
    graph.node.extend(nodes)
    graph.input.append(helper.make_tensor_value_info(WRITE_INDEX, TensorProto.INT64, ["batch_size"]))
    mask_type = TensorProto.FLOAT if cpu else TensorProto.BOOL
    for name in (ATTENTION_MASK, SLIDING_MASK) if sliding else (ATTENTION_MASK,):
        graph.input.append(helper.make_tensor_value_info(
            name, mask_type, ["batch_size", 1, "sequence_length", "capacity"]))
    if sliding:
        model.metadata_props.add(key=WINDOW_KEY, value=str(window))
    _present_shapes_follow_past(graph)
    drop_dead(graph)
    _scale_queries_first(graph)
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx") and opset.version < SCATTER_OPSET:
            opset.version = SCATTER_OPSET
    return True


def _is_past_concat(node) -> bool:
    return (
        node is not None and node.op_type == "Concat" and len(node.input) == 2
        and node.input[0].startswith("past_key_values.")
    )


def _present_shapes_follow_past(graph) -> None:
    """A present is now its past buffer written into: its sequence dimension is the buffer's capacity."""
    for output in graph.output:
        if output.name.startswith("present."):
            dim = output.type.tensor_type.shape.dim[2]
            dim.Clear()
            dim.dim_param = "capacity"
    for info in graph.input:
        if info.name.startswith("past_key_values."):
            dim = info.type.tensor_type.shape.dim[2]
            dim.Clear()
            dim.dim_param = "capacity"


def additive(mask: np.ndarray) -> np.ndarray:
    """A boolean attention mask (True = attend) as the additive float32 mask of the CPU graph."""
    return np.where(mask, np.float32(0.0), MASKED)


def _scale_queries_first(graph) -> None:
    """Each Attention's query times its scale, the op's scale then 1 (see the module docstring). The prepared
    graph always spells its scale out (models.graph_edits.fused_attention)."""
    from onnx import helper, numpy_helper

    nodes = []
    for node in graph.node:
        scale = next((a for a in node.attribute if a.name == "scale"), None) if node.op_type == "Attention" else None
        if scale is not None:
            factor, scaled = f"{node.name}_bp_query_scale", f"{node.input[0]}_bp_scaled"
            graph.initializer.append(numpy_helper.from_array(np.array(scale.f, dtype=np.float32), factor))
            nodes.append(helper.make_node("Mul", [node.input[0], factor], [scaled], name=f"{node.name}_bp_scale"))
            node.input[0] = scaled
            scale.f = 1.0
        nodes.append(node)
    graph.ClearField("node")
    graph.node.extend(nodes)
