"""Tiny ONNX graphs built at load time that run on the model's own provider, so KV rows and logits are handled
on the device (CUDA or CPU) by the same code path instead of round-tripping through numpy."""

from __future__ import annotations

from onnx import TensorProto, helper

OPSET = 17
IR_VERSION = 8  # old enough for every onnxruntime this project supports


def _model(nodes, inputs, outputs, initializers=()) -> bytes:
    graph = helper.make_graph(nodes, "branchpoint_helper", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    return model.SerializeToString()


def row_gather_model(num_tensors: int, elem_type: int) -> bytes:
    """Inputs `indices` int64 [N] and `kv_{j}` [B, ...]; outputs `out_{j}` = kv_j[indices] (Gather on axis 0).
    One call gathers the rows of every KV tensor at once (fork, reorder and drop in one go)."""
    indices = helper.make_tensor_value_info("indices", TensorProto.INT64, ["rows"])
    inputs = [indices]
    outputs = []
    nodes = []
    for j in range(num_tensors):
        shape = ["batch", f"d1_{j}", f"d2_{j}", f"d3_{j}"]
        inputs.append(helper.make_tensor_value_info(f"kv_{j}", elem_type, shape))
        outputs.append(helper.make_tensor_value_info(f"out_{j}", elem_type, ["rows", f"d1_{j}", f"d2_{j}", f"d3_{j}"]))
        nodes.append(helper.make_node("Gather", [f"kv_{j}", "indices"], [f"out_{j}"], axis=0))
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
