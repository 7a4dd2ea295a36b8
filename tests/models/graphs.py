"""A graph shaped like optimum's export for the quantizers' tests: q_proj, then the logits MatMul, with the given
fp32 weights ([N, K] rows as the GGUF stores them)."""

from __future__ import annotations

import numpy as np


def checked_model(graph):
    """`graph` as an opset-17 model, checked."""
    import onnx
    from onnx import helper

    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def projection_and_logits_model(wq: np.ndarray, embed: np.ndarray):
    from onnx import TensorProto, helper, numpy_helper

    k, vocab = wq.shape[1], embed.shape[0]
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["h"], name="/model/layers.0/self_attn/q_proj/MatMul"),
        helper.make_node("MatMul", ["h", "lm_head"], ["logits"], name="/lm_head/MatMul"),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", "s", k])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["b", "s", vocab])],
        [numpy_helper.from_array(wq.T.copy(), "wq"), numpy_helper.from_array(embed.T.copy(), "lm_head")],
    )
    return checked_model(graph)


def sibling_projections_model(weights: dict[str, np.ndarray], embed: np.ndarray):
    """q, k and v projections of one input x (weights [N, K] by name "q", "k", "v"), each a graph output, and the
    logits read from q: the siblings a variant may run as one wider matrix."""
    from onnx import TensorProto, helper, numpy_helper

    k, vocab = next(iter(weights.values())).shape[1], embed.shape[0]
    nodes = [helper.make_node("MatMul", ["x", f"w{p}"], [p], name=f"/model/layers.0/self_attn/{p}_proj/MatMul")
             for p in weights]
    nodes.append(helper.make_node("MatMul", ["q", "lm_head"], ["logits"], name="/lm_head/MatMul"))
    outputs = [helper.make_tensor_value_info(p, TensorProto.FLOAT, ["b", "s", w.shape[0]]) for p, w in weights.items()]
    graph = helper.make_graph(
        nodes,
        "siblings",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", "s", k])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["b", "s", vocab]), *outputs],
        [*(numpy_helper.from_array(w.T.copy(), f"w{p}") for p, w in weights.items()),
         numpy_helper.from_array(embed.T.copy(), "lm_head")],
    )
    return checked_model(graph)


def run_outputs(model, x: np.ndarray) -> dict[str, np.ndarray]:
    """Every output of `model` (one input "x") on the CPU, by name."""
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, {"x": x}), strict=True))


def run(model, x: np.ndarray) -> np.ndarray:
    """The logits of `model` (its first output) for x."""
    return next(iter(run_outputs(model, x).values()))
