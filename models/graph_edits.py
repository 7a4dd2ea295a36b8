"""ONNX graph edits applied at preparation, after the export, to optimum's Llama-style decoders (each only when
the graph has the expected pattern; the manifest records which were applied).

`last_position_lm_head`: the exported graph computes logits for every prompt position ([B, S, vocab]: 98 MB
and S x 57 MFLOP of lm_head for a 500-token prompt) although decoding needs only the last one. Slicing the
final hidden state to its last position before lm_head gives the same last-row logits and KV presents.

`grouped_attention`: grouped-query attention reads the KV cache as it is instead of a repeated copy of it
(see grouped_attention).

`fused_attention` (after grouped_attention): each layer's attention is one ONNX `Attention` op (opset 23) instead
of MatMul / Add / Softmax / IsNaN / Where / MatMul over materialised [heads, S, T] tensors (see fused_attention).
Measured on the default model, a 2,000-token prefill in 256-token chunks: attention 6.0 s of kernel time → 2.4 s
(ORT profiler, 2 busy cores); logits within 4e-5, the same greedy tokens."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

LOGITS = "logits"
EDITS = (
    "last_position_lm_head",
    "grouped_attention",
    "fused_attention",
    "position_ids_input",
    "sliding_window_by_position",
)
RECORD_NAME = "graph_edits.json"  # {"applied": [...], "skipped": {edit: why}}: the worker's note to preparation


def last_position_lm_head(model):
    """Edit an onnx.ModelProto in place: `logits` becomes [B, 1, vocab], the last position's. Returns it."""
    from onnx import helper, numpy_helper

    graph = model.graph
    index, head = next((i, n) for i, n in enumerate(graph.node) if LOGITS in n.output)
    hidden = head.input[0]
    bounds = {"bp_last_starts": -1, "bp_last_ends": np.iinfo(np.int64).max, "bp_last_axes": 1}
    graph.initializer.extend(numpy_helper.from_array(np.array([v], np.int64), name) for name, v in bounds.items())
    sliced = f"{hidden}_last_position"
    graph.node.insert(index, helper.make_node("Slice", [hidden, *bounds], [sliced], name="bp_last_position"))
    head.input[0] = sliced
    output = next(o for o in graph.output if o.name == LOGITS)
    output.type.tensor_type.shape.dim[1].Clear()
    output.type.tensor_type.shape.dim[1].dim_value = 1
    return model


def lm_head_mismatch(model) -> str | None:
    """Why last_position_lm_head does not apply to this graph (None when it does)."""
    heads = [n for n in model.graph.node if LOGITS in n.output]
    output = next((o for o in model.graph.output if o.name == LOGITS), None)
    if len(heads) != 1 or heads[0].op_type != "MatMul" or output is None:
        return "no single MatMul producing the logits output"
    dims = output.type.tensor_type.shape.dim
    if len(dims) != 3 or dims[1].HasField("dim_value"):
        return "logits are not [batch, sequence, vocab] with a dynamic sequence axis"
    return None


def attention_mismatch(model, config: dict) -> str | None:
    """Why grouped_attention does not apply to this graph (None when it does)."""
    missing = [key for key in LLAMA_ATTENTION_KEYS if key not in config]
    if missing:  # e.g. GPT-2 names them n_head / n_embd / n_layer and has no grouped KV heads anyway
        return f"config.json has no {', '.join(missing)} (not a Llama-style attention config)"
    heads, kv_heads, _ = attention_shape(config)
    if kv_heads == heads or heads % kv_heads:
        return f"not grouped-query attention ({heads} query heads, {kv_heads} KV heads)"
    producers, consumers = graph_links(model.graph)
    repeats = [r for n in model.graph.node if n.op_type == "Expand" and (r := _repeat_kv(n, producers, consumers))]
    layers = config.get("num_hidden_layers")
    if len(repeats) != 2 * layers:
        return f"{len(repeats)} repeat_kv chains found, expected 2 per layer ({layers} layers)"
    kinds = {user.op_type for _, repeated in repeats for user in consumers.get(repeated, [])}
    if not kinds <= {"Shape", "Transpose", "MatMul"}:
        return f"repeated KV heads used by unexpected nodes: {sorted(kinds)}"
    return None


LLAMA_ATTENTION_KEYS = ("num_attention_heads", "hidden_size", "num_hidden_layers")


def attention_shape(config: dict) -> tuple[int, int, int]:
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or heads
    return heads, kv_heads, config.get("head_dim") or config["hidden_size"] // heads


def apply_edits(model, config: dict, edits: tuple[str, ...] = EDITS) -> tuple[list[str], dict[str, str]]:
    """Apply the named edits that match the graph to an onnx.ModelProto (config: the model's config.json).
    Returns (applied edit names, {skipped edit name: why})."""
    applied, skipped = [], {}
    if "last_position_lm_head" in edits:
        if reason := lm_head_mismatch(model):
            skipped["last_position_lm_head"] = reason
        else:
            last_position_lm_head(model)
            applied.append("last_position_lm_head")
    if "grouped_attention" in edits:
        if reason := attention_mismatch(model, config):
            skipped["grouped_attention"] = reason
        else:
            grouped_attention(model, *attention_shape(config))
            applied.append("grouped_attention")
    if "fused_attention" in edits:
        if reason := fused_attention_mismatch(model, config):
            skipped["fused_attention"] = reason
        else:
            fused_attention(model)
            applied.append("fused_attention")
    if "position_ids_input" in edits:
        if reason := position_ids_mismatch(model):
            skipped["position_ids_input"] = reason
        else:
            position_ids_input(model)
            applied.append("position_ids_input")
    if "sliding_window_by_position" in edits:
        if reason := sliding_window_mismatch(model, config):
            skipped["sliding_window_by_position"] = reason
        else:
            sliding_window_by_position(model, config["sliding_window"])
            applied.append("sliding_window_by_position")
    return applied, skipped


def edit_model_folder(model_dir: Path, edits: tuple[str, ...] = EDITS) -> tuple[list[str], dict[str, str]]:
    """Apply the edits to model_dir/model.onnx in place (rewritten only if one applies); see apply_edits."""
    import onnx

    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    model = onnx.load(str(model_dir / "model.onnx"))
    applied, skipped = apply_edits(model, config, edits)
    if applied:
        onnx.checker.check_model(model, full_check=False)
        save_model(model, model_dir)
    return applied, skipped


def save_model(model, model_dir: Path) -> None:
    import onnx

    large = model.ByteSize() > 1_900_000_000  # protobuf's 2 GB limit: keep big weights beside the graph
    (model_dir / "model.onnx_data").unlink(missing_ok=True)
    onnx.save(model, str(model_dir / "model.onnx"), save_as_external_data=large, location="model.onnx_data")


def edited_model_dir(model_dir: Path, out_dir: Path, edits: tuple[str, ...] = EDITS) -> Path:
    """A copy of a model folder whose model.onnx has the named edits (other small files copied), for the bench
    and the tests."""
    import onnx

    out_dir.mkdir(parents=True, exist_ok=True)
    for path in model_dir.iterdir():
        if path.is_file() and not path.name.startswith("model.onnx") and not path.name.endswith(".gguf"):
            shutil.copy2(path, out_dir / path.name)
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    model = onnx.load(str(model_dir / "model.onnx"))
    apply_edits(model, config, edits)
    save_model(model, out_dir)
    return out_dir


def graph_links(graph) -> tuple[dict, dict[str, list]]:
    """(tensor name → producing node, tensor name → consuming nodes)."""
    producers = {out: node for node in graph.node for out in node.output}
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    return producers, consumers


def grouped_attention(model, num_heads: int, num_kv_heads: int, head_dim: int) -> int:
    """Edit an onnx.ModelProto in place: grouped-query attention without materialising the repeated KV heads.

    The export repeats every KV head num_heads / num_kv_heads times per step (Unsqueeze → Expand → Reshape: a
    full copy of the cache, 3x its size here) before the two attention MatMuls. Grouping the query heads instead
    ([B, H, S, D] → [B, KV, H/KV * S, D], a free reshape) lets both MatMuls read the cache as it is; results are
    the same products summed in the same order. Returns the number of repeats removed (2 per layer)."""
    graph = model.graph
    producers, consumers = graph_links(graph)
    shapes = _add_shapes(graph, num_heads, num_kv_heads, head_dim)
    before: dict[str, list] = {}
    after: dict[str, list] = {}
    edited = 0
    for expand in [n for n in graph.node if n.op_type == "Expand"]:
        repeat = _repeat_kv(expand, producers, consumers)
        if repeat is None:
            continue
        cache, expanded = repeat
        for user in consumers.get(expanded, []):
            if user.op_type == "Shape":
                user.input[0] = cache  # read off the cache: batch, length and head_dim are the same
            elif user.op_type == "Transpose":
                user.input[0] = cache
                scores = _matmul_using(user, consumers)
                _group(scores, 0, shapes["queries"], shapes["scores"], before, after)
            elif user.op_type == "MatMul":
                user.input[1] = cache
                _group(user, 0, shapes["weights"], shapes["outputs"], before, after)
        edited += 1
    _reorder(graph, before, after)
    _drop_dead_nodes(graph)
    return edited


def _add_shapes(graph, num_heads: int, num_kv_heads: int, head_dim: int) -> dict[str, str]:
    """Reshape targets (0 copies the input's dim, -1 is inferred): grouped and back."""
    from onnx import numpy_helper

    targets = {
        "queries": [0, num_kv_heads, -1, head_dim],
        "scores": [0, num_heads, -1, 0],
        "weights": [0, num_kv_heads, -1, 0],
        "outputs": [0, num_heads, -1, head_dim],
    }
    names = {}
    for key, dims in targets.items():
        names[key] = f"bp_gqa_{key}_shape"
        graph.initializer.append(numpy_helper.from_array(np.array(dims, np.int64), names[key]))
    return names


def _repeat_kv(expand, producers, consumers) -> tuple[str, str] | None:
    """(cache tensor, repeated tensor) when `expand` is transformers' repeat_kv, else None."""
    unsqueeze = producers.get(expand.input[0])
    users = consumers.get(expand.output[0], [])
    if unsqueeze is None or unsqueeze.op_type != "Unsqueeze" or len(users) != 1 or users[0].op_type != "Reshape":
        return None
    cache = unsqueeze.input[0]
    if not cache.startswith("present."):
        return None
    return cache, users[0].output[0]


def _matmul_using(transpose, consumers):
    """The QK^T MatMul fed (through the scaling Mul) by the transposed keys."""
    node = transpose
    while node.op_type != "MatMul":
        (node,) = consumers[node.output[0]]
    return node


def _group(matmul, operand: int, grouped_shape: str, back_shape: str, before: dict, after: dict) -> None:
    from onnx import helper

    source, result = matmul.input[operand], matmul.output[0]
    grouped_in, grouped_out = f"{source}_bp_grouped", f"{result}_bp_grouped"
    before.setdefault(matmul.name, []).append(
        helper.make_node("Reshape", [source, grouped_shape], [grouped_in], name=f"{matmul.name}_bp_group")
    )
    matmul.input[operand] = grouped_in
    matmul.output[0] = grouped_out
    after.setdefault(matmul.name, []).append(
        helper.make_node("Reshape", [grouped_out, back_shape], [result], name=f"{matmul.name}_bp_ungroup")
    )


def _reorder(graph, before: dict, after: dict) -> None:
    """Insert the new nodes around their MatMul, keeping the node list topologically sorted."""
    nodes = []
    for node in graph.node:
        nodes += [*before.get(node.name, []), node, *after.get(node.name, [])]
    graph.ClearField("node")
    graph.node.extend(nodes)


def _drop_dead_nodes(graph) -> None:
    """Remove nodes none of whose outputs is used (the repeat_kv chains), repeatedly."""
    outputs = {o.name for o in graph.output}
    while True:
        used = {name for node in graph.node for name in node.input} | outputs
        alive = [node for node in graph.node if any(out in used for out in node.output)]
        if len(alive) == len(graph.node):
            return
        graph.ClearField("node")
        graph.node.extend(alive)


ATTENTION_OPSET = 23  # ONNX's Attention op: grouped-query heads, a boolean mask, one kernel


def fused_attention_mismatch(model, config: dict) -> str | None:
    """Why fused_attention does not apply to this graph (None when it does)."""
    producers, consumers = graph_links(model.graph)
    found = sum(_attention_pattern(n, producers, consumers, model.graph) is not None
                for n in model.graph.node if n.op_type == "Softmax")
    layers = config.get("num_hidden_layers")
    if found != layers:
        return f"{found} grouped attention patterns found, expected one per layer ({layers} layers)"
    return None


def fused_attention(model) -> int:
    """Edit an onnx.ModelProto in place (after grouped_attention): each layer's attention (scaled QK^T MatMul,
    mask Add, Softmax, the NaN guard, the weights × V MatMul, with their grouping reshapes) becomes one ONNX
    `Attention` node over the rotated queries, the present keys and values and the boolean mask the export
    builds once (True = attend): no [heads, S, T] float scores, mask or NaN pass materialised between ops. Raises
    the default opset to 23 where lower. Returns the number of layers fused."""
    from onnx import helper

    graph = model.graph
    producers, consumers = graph_links(graph)
    replacements = {}
    for softmax in [n for n in graph.node if n.op_type == "Softmax"]:
        found = _attention_pattern(softmax, producers, consumers, graph)
        if found is None:
            continue
        (query, key, value, mask, scale), last = found
        replacements[last.name] = helper.make_node(
            "Attention", [query, key, value, mask], list(last.output), name=f"{last.name}_bp_attention", scale=scale
        )
    nodes = [replacements.get(node.name, node) for node in graph.node]
    graph.ClearField("node")
    graph.node.extend(nodes)
    _drop_dead_nodes(graph)
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx") and opset.version < ATTENTION_OPSET:
            opset.version = ATTENTION_OPSET
    return len(replacements)


def _attention_pattern(softmax, producers, consumers, graph):
    """((query, key, value, boolean mask, scale), the node producing the attention output) when `softmax` is
    the grouped export's attention, else None."""
    add = producers.get(softmax.input[0])
    if add is None or add.op_type != "Add":
        return None
    scores, mask_value = add.input if _chain(producers, add.input[0], "Reshape", "MatMul") else add.input[::-1]
    qk = _chain(producers, scores, "Reshape", "MatMul")
    mask = producers.get(mask_value)
    if qk is None or mask is None or mask.op_type != "Where":
        return None
    query_mul = _chain(producers, qk.input[0], "Reshape", "Mul")
    key_mul = producers.get(qk.input[1])
    key_t = producers.get(key_mul.input[0]) if key_mul is not None and key_mul.op_type == "Mul" else None
    if query_mul is None or key_t is None or key_t.op_type != "Transpose":
        return None
    weights = _after_nan_guard(softmax, producers, consumers)
    group = _only_user(consumers, weights, "Reshape")
    pv = group and _only_user(consumers, group.output[0], "MatMul")
    last = pv and _only_user(consumers, pv.output[0], "Reshape")
    scale = _constant(graph, producers, query_mul.input[1]) * _constant(graph, producers, key_mul.input[1])
    if last is None or scale is None:
        return None
    return (query_mul.input[0], key_t.input[0], pv.input[1], mask.input[0], float(scale)), last


def _chain(producers, name: str, *ops: str):
    """The last node of the producer chain of `name` with these op types (nearest first), else None."""
    node = None
    for op in ops:
        node = producers.get(name)
        if node is None or node.op_type != op:
            return None
        name = node.input[0]
    return node


def _after_nan_guard(softmax, producers, consumers) -> str:
    """The attention weights: the softmax output, or the export's Where(IsNaN(p), 0, p) of it."""
    users = consumers.get(softmax.output[0], [])
    where = next((u for u in users if u.op_type == "Where"), None)
    if where is not None and {u.op_type for u in users} == {"IsNaN", "Where"}:
        return where.output[0]
    return softmax.output[0]


def _only_user(consumers, name: str, op: str):
    users = consumers.get(name, [])
    return users[0] if len(users) == 1 and users[0].op_type == op else None


def _constant(graph, producers, name: str) -> float | None:
    """A scalar constant's value (an initializer or a Constant node), else None."""
    from onnx import numpy_helper

    for init in graph.initializer:
        if init.name == name:
            return float(numpy_helper.to_array(init).reshape(-1)[0])
    node = producers.get(name)
    if node is not None and node.op_type == "Constant":
        return float(numpy_helper.to_array(node.attribute[0].t).reshape(-1)[0])
    return None


# ------------------------------------------------------------------------------- sliding_window_by_position


def sliding_layers(model, config: dict) -> tuple[list, list]:
    """(Attention nodes of the sliding-window layers, of the global layers), by config.json's layer_types."""
    kinds = config.get("layer_types") or []
    attention = [n for n in model.graph.node if n.op_type == "Attention"]
    if len(attention) != len(kinds):
        return [], []
    sliding = [n for n, kind in zip(attention, kinds, strict=True) if kind == "sliding_attention"]
    return sliding, [n for n, kind in zip(attention, kinds, strict=True) if kind != "sliding_attention"]


def sliding_window_mismatch(model, config: dict) -> str | None:
    """Why sliding_window_by_position does not apply (None when it does)."""
    if not config.get("sliding_window") or "sliding_attention" not in (config.get("layer_types") or []):
        return "no sliding-window layers (config.json layer_types)"
    sliding, full = sliding_layers(model, config)
    if not sliding or not full:
        return "not one fused Attention node per layer with both sliding-window and global layers"
    producers, _ = graph_links(model.graph)
    sources = {_sliced(n.input[3], producers) for n in sliding}, {_sliced(n.input[3], producers) for n in full}
    if len(sources[0]) != 1 or len(sources[1]) != 1 or sources[0] == sources[1]:
        return "the sliding-window and global layers do not each read one mask of their own"
    if "attention_mask" not in {i.name for i in model.graph.input}:
        return "no attention_mask input to count positions from"
    return None


def _sliced(name: str, producers: dict) -> str:
    node = producers.get(name)
    return node.input[0] if node is not None and node.op_type == "Slice" else name


def sliding_window_by_position(model, window: int) -> None:
    """The sliding-window layers' mask counts the window in positions, not cache slots: the global layers'
    boolean mask (causal, padding) And (query position - key position < window), positions being the running
    count of attended slots of each row's attention_mask (as the export derives its rotary positions).

    The export counts the window in slots of the cache (transformers' sliding_window_causal_mask_function over
    cache indices). For one row read from its start that is the same; but Branchpoint's rows of different lengths
    share one physical cache, a row cut back (a branch, a truncated beam) continuing after a masked gap, and by
    slots its window would then cover fewer of its own tokens than transformers gives it."""
    from onnx import helper, numpy_helper

    graph = model.graph
    producers, _ = graph_links(graph)
    config_like = {n.name: n for n in graph.node if n.op_type == "Attention"}
    attention = list(config_like.values())
    sources = [_sliced(n.input[3], producers) for n in attention]
    counts = {name: sources.count(name) for name in set(sources)}
    sliding_source = max(counts, key=lambda name: (counts[name], name))  # five of six layers slide in Gemma 3
    global_source = next(name for name in counts if name != sliding_source)
    prefix = "bp_window"
    constants = {
        f"{prefix}_one": np.array(1, np.int64),
        f"{prefix}_axis": np.array(1, np.int64),
        f"{prefix}_window": np.array(window, np.int64),
        f"{prefix}_axes_q": np.array([1, 3], np.int64),
        f"{prefix}_axes_k": np.array([1, 2], np.int64),
        f"{prefix}_zero": np.array([0], np.int64),
        f"{prefix}_dim1": np.array([1], np.int64),
        f"{prefix}_end": np.array([np.iinfo(np.int64).max], np.int64),
    }
    graph.initializer.extend(numpy_helper.from_array(value, name) for name, value in constants.items())
    nodes = [
        helper.make_node("CumSum", ["attention_mask", f"{prefix}_axis"], [f"{prefix}_count"]),
        helper.make_node("Sub", [f"{prefix}_count", f"{prefix}_one"], [f"{prefix}_kpos"]),  # [B, T]
        helper.make_node("Shape", ["input_ids"], [f"{prefix}_ids_shape"], start=1, end=2),
        helper.make_node("Neg", [f"{prefix}_ids_shape"], [f"{prefix}_minus_s"]),
        helper.make_node("Slice", [f"{prefix}_kpos", f"{prefix}_minus_s", f"{prefix}_end", f"{prefix}_dim1"],
                         [f"{prefix}_qpos"]),  # [B, S]: the new tokens' positions
        helper.make_node("Unsqueeze", [f"{prefix}_qpos", f"{prefix}_axes_q"], [f"{prefix}_q"]),  # [B, 1, S, 1]
        helper.make_node("Unsqueeze", [f"{prefix}_kpos", f"{prefix}_axes_k"], [f"{prefix}_k"]),  # [B, 1, 1, T]
        helper.make_node("Sub", [f"{prefix}_q", f"{prefix}_k"], [f"{prefix}_distance"]),
        helper.make_node("Less", [f"{prefix}_distance", f"{prefix}_window"], [f"{prefix}_inside"]),
        helper.make_node("And", [global_source, f"{prefix}_inside"], [f"{prefix}_mask"]),
    ]
    for node in nodes:
        node.name = node.output[0]
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name == sliding_source and node.op_type in ("Slice", "Attention"):
                node.input[i] = f"{prefix}_mask"
    index = max(i for i, n in enumerate(graph.node) if global_source in n.output) + 1
    for offset, node in enumerate(nodes):
        graph.node.insert(index + offset, node)
    _drop_dead_nodes(graph)


# --------------------------------------------------------------------------------------- position_ids_input

POSITIONS = "position_ids"


def rotary_positions(model) -> tuple[str, list] | None:
    """(the tensor the rotary embeddings read as positions, the nodes reading it) where the export derives them
    from the cache length (Unsqueeze(Range(past length, past length + S))), else None."""
    graph = model.graph
    producers, consumers = graph_links(graph)
    for node in graph.node:
        if node.op_type != "Unsqueeze" or producers.get(node.input[0]) is None:
            continue
        if producers[node.input[0]].op_type != "Range":
            continue
        readers = [c for c in consumers.get(node.output[0], []) if "rotary_emb" in c.name]
        if readers:
            return node.output[0], readers
    return None


def position_ids_mismatch(model) -> str | None:
    if POSITIONS in {i.name for i in model.graph.input}:
        return "the graph has a position_ids input already"
    if rotary_positions(model) is None:
        return "no rotary positions derived from the cache length"
    return None


def position_ids_input(model) -> None:
    """The rotary embeddings read a `position_ids` input [batch, sequence] instead of positions counted from the
    cache length (Gemma 3's export has none): Branchpoint's rows of different lengths share one physical cache,
    a row cut back continuing after a masked gap, and its next token's position is its own length, not the
    cache's (runtime.kv_cache gives each row its positions, as for Llama's export). Masks stay as exported."""
    from onnx import TensorProto, helper

    found = rotary_positions(model)
    assert found is not None
    positions, readers = found
    for node in readers:
        for i, name in enumerate(node.input):
            if name == positions:
                node.input[i] = POSITIONS
    model.graph.input.append(
        helper.make_tensor_value_info(POSITIONS, TensorProto.INT64, ["batch_size", "sequence_length"])
    )
    _drop_dead_nodes(model.graph)
