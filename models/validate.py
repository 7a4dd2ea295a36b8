"""Validation of an exported model with ONNX Runtime (the only onnxruntime use outside runtime/): the graph
contract, a few greedy steps with the KV cache, and cached logits == logits recomputed without the cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np

REQUIRED_INPUTS = ("input_ids", "attention_mask")
SMOKE_PROMPT = "The capital of France is"


class ValidationError(ValueError):
    pass


def open_session(model_path: Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])


def describe_graph(session) -> dict:
    """Names, element types and shapes (symbolic dims as strings) of the graph's inputs and outputs."""

    def describe(args) -> list[dict]:
        return [{"name": a.name, "dtype": a.type, "shape": list(a.shape)} for a in args]

    return {"inputs": describe(session.get_inputs()), "outputs": describe(session.get_outputs())}


def kv_layout(session) -> dict:
    """Layers, KV heads, head_dim, element type from the past_key_values inputs; checks the graph contract."""
    inputs = {a.name: a for a in session.get_inputs()}
    missing = [n for n in REQUIRED_INPUTS if n not in inputs]
    past = sorted((n for n in inputs if n.startswith("past_key_values.")), key=layer_order)
    outputs = {a.name for a in session.get_outputs()}
    if missing or not past or "logits" not in outputs:
        raise ValidationError(
            f"model.onnx is not a decoder exported with past_key_values (missing inputs {missing or 'none'}, "
            f"{len(past)} past_key_values inputs, outputs {sorted(outputs)[:4]}…); export with "
            "task text-generation-with-past"
        )
    shape = inputs[past[0]].shape
    if len(shape) != 4 or not isinstance(shape[1], int) or not isinstance(shape[3], int):
        raise ValidationError(f"past_key_values shape {shape} is not [batch, kv_heads, past, head_dim]")
    dtype = np.float16 if inputs[past[0]].type == "tensor(float16)" else np.float32
    return {
        "num_layers": len(past) // 2,
        "num_kv_heads": shape[1],
        "head_dim": shape[3],
        "kv_dtype": dtype,
        "past_names": past,
        "input_names": list(inputs),
    }


def layer_order(name: str) -> tuple[int, str]:
    _, layer, kind = name.split(".")
    return int(layer), kind


def run_step(session, layout: dict, ids: np.ndarray, past: dict, past_len: int) -> tuple[np.ndarray, dict]:
    """One forward call for one row: logits of the last position and the new cache."""
    total = past_len + ids.shape[1]
    feed = {"input_ids": ids, "attention_mask": np.ones((1, total), dtype=np.int64)}
    if "position_ids" in layout["input_names"]:
        feed["position_ids"] = np.arange(past_len, total, dtype=np.int64)[None, :]
    feed.update(past)
    outputs = session.run(None, feed)
    names = [o.name for o in session.get_outputs()]
    logits = outputs[names.index("logits")][0, -1].astype(np.float32)
    present = {
        n.replace("present", "past_key_values"): v
        for n, v in zip(names, outputs, strict=True)
        if n.startswith("present")
    }
    return logits, present


def empty_past(layout: dict) -> dict:
    shape = (1, layout["num_kv_heads"], 0, layout["head_dim"])
    return {name: np.zeros(shape, dtype=layout["kv_dtype"]) for name in layout["past_names"]}


def greedy_with_cache(session, layout: dict, prompt_ids: list[int], steps: int) -> tuple[list[int], np.ndarray]:
    """Greedy ids for `steps` tokens using the KV cache, and the logits of the last step."""
    ids = np.array([prompt_ids], dtype=np.int64)
    logits, past = run_step(session, layout, ids, empty_past(layout), 0)
    generated: list[int] = []
    for _ in range(steps):
        check_finite(logits)
        generated.append(int(np.argmax(logits)))
        position = len(prompt_ids) + len(generated) - 1
        logits, past = run_step(session, layout, np.array([[generated[-1]]], dtype=np.int64), past, position)
    return generated, logits


def check_finite(logits: np.ndarray) -> None:
    if not np.all(np.isfinite(logits)):
        raise ValidationError("the model produced non-finite logits")


def smoke_test(
    model_dir: Path,
    prompt: str = SMOKE_PROMPT,
    steps: int = 4,
    expect: str | None = None,
    tolerance: float | None = None,
) -> dict:
    """Greedy steps with the KV cache; the last cached logits must equal a full recomputation without the
    cache (within `tolerance`: by default 1e-3, 1e-2 for an fp16 cache). `expect`: the continuation must start
    with it. Returns the graph description and the generation."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    prompt_ids = tokenizer.encode(prompt).ids  # as a run encodes a plain prompt (with a bos where the model adds one)
    session = open_session(model_dir / "model.onnx")
    layout = kv_layout(session)
    generated, cached_logits = greedy_with_cache(session, layout, prompt_ids, steps)
    full_ids = np.array([prompt_ids + generated], dtype=np.int64)
    full_logits, _ = run_step(session, layout, full_ids, empty_past(layout), 0)
    diff = float(np.max(np.abs(full_logits - cached_logits)))
    if tolerance is None:
        tolerance = 1e-2 if layout["kv_dtype"] == np.float16 else 1e-3
    if diff > tolerance:
        raise ValidationError(f"cached logits differ from recomputed ones by {diff:.2e} (> {tolerance:g})")
    text = tokenizer.decode(generated, skip_special_tokens=False)
    if expect is not None and not text.startswith(expect):
        raise ValidationError(f"{prompt!r} continued with {text!r}, expected it to start with {expect!r}")
    layout_info = {k: layout[k] for k in ("num_layers", "num_kv_heads", "head_dim")}
    return {
        "graph": describe_graph(session),
        "layout": layout_info,
        "prompt": prompt,
        "prompt_ids": prompt_ids,
        "generated_ids": generated,
        "continuation": text,
        "cache_max_abs_diff": diff,
    }


def cuda_unavailable_reason() -> str | None:
    """None when the CUDA EP really runs a session here (read back from a probe session), else why not.
    Provider choice itself is runtime/'s job: this asks it."""
    from runtime.session import CUDA, create_session
    from runtime.session import cuda_unavailable_reason as cannot_try_cuda

    reason = cannot_try_cuda()
    if reason is not None:
        return reason
    try:
        _, placement = create_session(probe_model(), device="auto")
    except Exception as exc:  # a broken CUDA install must not break listing models
        return f"the CUDA EP failed to start: {exc}"
    return None if placement == CUDA else "ONNX Runtime could not load the CUDA EP (fell back to CPU)"


def probe_model() -> bytes:
    """A one-node graph, enough to see which provider a session really gets."""
    from onnx import TensorProto, helper

    node = helper.make_node("Identity", ["x"], ["y"])
    value = helper.make_tensor_value_info
    graph = helper.make_graph(
        [node], "probe", [value("x", TensorProto.FLOAT, [1])], [value("y", TensorProto.FLOAT, [1])]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # what any onnxruntime >= 1.10 loads; onnx's default may be newer than ORT supports
    return model.SerializeToString()
