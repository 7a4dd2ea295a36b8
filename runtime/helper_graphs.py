"""Tiny ONNX graphs built at load time that run on the model's own provider, so KV rows and logits are handled
on the device (CUDA or CPU) by the same code path instead of round-tripping through numpy."""

from __future__ import annotations

import functools

from onnx import TensorProto, helper

OPSET = 17
IR_VERSION = 8  # old enough for every onnxruntime this project supports


def _model(nodes, inputs, outputs, initializers=()) -> bytes:
    graph = helper.make_graph(nodes, "branchpoint_helper", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    return model.SerializeToString()


def row_gather_model(num_tensors: int, elem_type: int, gather: bool = True, padded: bool = False) -> bytes:
    """Inputs `indices` int64 [N] and `kv_{j}` [B, ...]; outputs `out_{j}` = kv_j[indices] (Gather on axis 0).
    One call gathers the rows of every KV tensor at once (fork, reorder and drop in one go). `padded`: a further
    input `pads` int64 [8] (ONNX Pad's) zero-pads every output: how an in-place KV buffer grows; without
    `gather` (and without `indices`) the rows stay as they are and are only padded."""
    inputs = [helper.make_tensor_value_info("indices", TensorProto.INT64, ["rows"])] if gather else []
    if padded:
        inputs.append(helper.make_tensor_value_info("pads", TensorProto.INT64, [8]))
    outputs = []
    nodes = []
    for j in range(num_tensors):
        shape = ["batch", f"d1_{j}", f"d2_{j}", f"d3_{j}"]
        inputs.append(helper.make_tensor_value_info(f"kv_{j}", elem_type, shape))
        out_shape = ["rows", f"d1_{j}", f"p2_{j}" if padded else f"d2_{j}", f"d3_{j}"]
        outputs.append(helper.make_tensor_value_info(f"out_{j}", elem_type, out_shape))
        rows = f"kv_{j}"
        if gather:
            rows = f"gathered_{j}" if padded else f"out_{j}"
            nodes.append(helper.make_node("Gather", [f"kv_{j}", "indices"], [rows], axis=0))
        if padded:
            nodes.append(helper.make_node("Pad", [rows, "pads"], [f"out_{j}"], mode="constant"))
    return _model(nodes, inputs, outputs)


def last_logits_model(elem_type: int) -> bytes:
    """Input `logits` [B, S, V]; output `last` float32 [B, V]: the last position only, cast to float32."""
    logits = helper.make_tensor_value_info("logits", elem_type, ["batch", "seq", "vocab"])
    last = helper.make_tensor_value_info("last", TensorProto.FLOAT, ["batch", "vocab"])
    minus_one = helper.make_tensor("minus_one", TensorProto.INT64, [], [-1])
    nodes = [helper.make_node("Gather", ["logits", "minus_one"], ["picked"], axis=1)]
    if elem_type == TensorProto.FLOAT:
        nodes[0].output[0] = "last"
    else:
        nodes.append(helper.make_node("Cast", ["picked"], ["last"], to=TensorProto.FLOAT))
    return _model(nodes, [logits], [last], [minus_one])


# ONNX Runtime's type strings of the graph's inputs/outputs -> ONNX element types.
ONNX_TYPES = {
    "tensor(float)": TensorProto.FLOAT,
    "tensor(float16)": TensorProto.FLOAT16,
    "tensor(bfloat16)": TensorProto.BFLOAT16,
}


def row_summary_model() -> bytes:
    """Inputs `logits` float32 [B, V], `k` int64 [1] and `chunks` int64 [3] = [B, n, V / n] (n divides V).
    Per row: `peak` (the max), `weights` = exp(logits - peak), `top_ids` [B, k]: the k largest logits,
    largest first (TopK puts equal values lower index first), and in n chunk sums each, `total_parts` of the
    weights and `shift_parts` of weights * (logits - peak) (the entropy is log(total) - shift sum / total).
    Most of what every lane's raw statistics need, in ORT's vectorised kernels (several times faster than
    numpy's exp here). The caller adds the chunk sums up in float64: ORT's float32 ReduceSum over a whole row
    of 49,152 is off by ~2e-5, over chunks of a few hundred by ~1e-7, as a float32 softmax is; and it costs
    less than numpy's float64 sum of the weights (measured: 0.26 vs 0.43 ms for 8 rows)."""
    logits = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "vocab"])
    k = helper.make_tensor_value_info("k", TensorProto.INT64, [1])
    chunks = helper.make_tensor_value_info("chunks", TensorProto.INT64, [3])
    outputs = [
        helper.make_tensor_value_info("peak", TensorProto.FLOAT, ["batch", 1]),
        helper.make_tensor_value_info("weights", TensorProto.FLOAT, ["batch", "vocab"]),
        helper.make_tensor_value_info("total_parts", TensorProto.FLOAT, ["batch", "parts"]),
        helper.make_tensor_value_info("shift_parts", TensorProto.FLOAT, ["batch", "parts"]),
        helper.make_tensor_value_info("top_ids", TensorProto.INT64, ["batch", "k"]),
    ]
    last_axis = helper.make_tensor("last_axis", TensorProto.INT64, [1], [2])
    nodes = [
        helper.make_node("ReduceMax", ["logits"], ["peak"], axes=[1], keepdims=1),
        helper.make_node("Sub", ["logits", "peak"], ["shifted"]),
        helper.make_node("Exp", ["shifted"], ["weights"]),
        helper.make_node("Mul", ["weights", "shifted"], ["weighted"]),
        helper.make_node("Reshape", ["weights", "chunks"], ["weight_chunks"]),
        helper.make_node("ReduceSum", ["weight_chunks", "last_axis"], ["total_parts"], keepdims=0),
        helper.make_node("Reshape", ["weighted", "chunks"], ["weighted_chunks"]),
        helper.make_node("ReduceSum", ["weighted_chunks", "last_axis"], ["shift_parts"], keepdims=0),
        helper.make_node("TopK", ["logits", "k"], ["top_values", "top_ids"], axis=1, largest=1, sorted=1),
    ]
    return _model(nodes, [logits, k, chunks], outputs, [last_axis])


SUMMARY_CHUNK = 256  # longest chunk a row summary sums in float32


@functools.cache  # asked at every step: a prime vocabulary's search runs once
def summary_parts(vocab: int) -> int:
    """How many chunks row_summary_model sums a row of `vocab` in: the fewest of at most SUMMARY_CHUNK
    values that divide it evenly (a prime vocabulary: one value per chunk, summed by the caller alone)."""
    return next(parts for parts in range(-(-vocab // SUMMARY_CHUNK), vocab + 1) if vocab % parts == 0)
