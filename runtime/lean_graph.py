"""Load-time edits that give the decoder's graph fewer nodes (runtime.in_place_kv applies them to the in-place graph).

A single-row step of a small model is as much per-node overhead as arithmetic: the default model's in-place graph has
2,036 nodes, most of them shape arithmetic and the rotary embedding spelled out op by op. Two edits, each applied only
where its whole pattern is found (the counts say how often):

- `constant_reshapes`: optimum's export computes the target shape of each head split and merge at run time
  (Shape → Gather → Unsqueeze → Concat of the batch and sequence lengths, as transformers'
  `hidden_states.view(*hidden_states.shape[:-1], -1, head_dim)` traces); ONNX's Reshape reads 0 as "this dimension
  as it is", so where those lengths are dimensions 0 and 1 of the tensor reshaped the same shape is a constant
  [0, 0, -1, head_dim] (the data and the shape's source are both [batch, sequence, …] activations of one layer).
- `rotary_embedding` (CPU only: ONNX Runtime's CUDA kernel for it is not checked here): x·cos + rotate_half(x)·sin,
  seven nodes for each of q and k in every layer, becomes one `RotaryEmbedding` (opset 23) fed the halves of the
  graph's own cos and sin ([batch, sequence, head_dim / 2]: every row's own positions, as computed before). Only for a
  rotation over the whole head (no partial rotary factor). The kernel's products and sums are the same; its rounding
  differs by float32 ulps (logits within ~4e-5 on the default model).

Measured on the default model (2 cores, quiet, interleaved): 2,036 → 1,166 nodes; a single-row step 0.93x the time in
fp32, 0.90x in the ggml variant; the same greedy tokens.
"""

from __future__ import annotations

import numpy as np

ROTARY_OPSET = 23


def lean_graph(model, config: dict, cpu: bool) -> dict[str, int]:
    """Apply the edits to an onnx.ModelProto in place (see the module docstring); their counts."""
    graph = model.graph
    links = Links(graph)  # the reshapes' edit adds initializers only: the links stay true for the rotary one
    counts = {"constant_reshapes": constant_reshapes(graph, links)}
    half = rotary_half(config)
    if cpu and half:
        counts["rotary_embedding"] = rotary_embedding(graph, half, links)
        for opset in model.opset_import:
            if opset.domain in ("", "ai.onnx") and opset.version < ROTARY_OPSET:
                opset.version = ROTARY_OPSET
    drop_dead(graph)
    return counts


class Links:
    """A graph's tensors looked up once: each one's producing node, and the values of the small constants (shapes,
    indices, axes: initializers of at most 8 elements kept in the file, Constant nodes), never a weight (which may
    live in an external file)."""

    def __init__(self, graph):
        from onnx import TensorProto, numpy_helper

        self.producers = {out: node for node in graph.node for out in node.output}
        self.constants = {init.name: numpy_helper.to_array(init) for init in graph.initializer
                          if init.data_location != TensorProto.EXTERNAL and int(np.prod(init.dims)) <= 8}
        for node in graph.node:
            if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
                self.constants[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)

    def producer(self, name):
        return self.producers.get(name)

    def scalar(self, name) -> int | None:
        """The value of a one-element integer constant, else None."""
        value = self.constants.get(name) if isinstance(name, str) else None
        return int(value.reshape(-1)[0]) if value is not None and value.size == 1 else None


def _kept_dimension(links: Links, name: str, position: int) -> bool:
    """Whether `name` is Unsqueeze(Gather(Shape(x), position)): the length of dimension `position` of some tensor."""
    unsqueeze = links.producer(name)
    gather = links.producer(unsqueeze.input[0]) if unsqueeze is not None and unsqueeze.op_type == "Unsqueeze" else None
    if gather is None or gather.op_type != "Gather":
        return False
    shape = links.producer(gather.input[0])
    whole = shape is not None and shape.op_type == "Shape" and all(  # the whole shape: start 0, no end
        a.name == "start" and a.i == 0 for a in shape.attribute)
    return whole and links.scalar(gather.input[1]) == position


def constant_reshapes(graph, links: Links | None = None) -> int:
    """Reshapes whose shape is Concat(batch length, sequence length, constants…) read off dimensions 0 and 1 get the
    constant shape [0, 0, constants…] instead (see the module docstring). Returns how many."""
    from onnx import numpy_helper

    links = links or Links(graph)
    count = 0
    for node in graph.node:
        if node.op_type != "Reshape" or any(a.name == "allowzero" and a.i for a in node.attribute):
            continue
        concat = links.producer(node.input[1])
        if concat is None or concat.op_type != "Concat" or len(concat.input) < 3:
            continue
        shape = [0 if position < 2 and _kept_dimension(links, part, position) else links.scalar(part)
                 for position, part in enumerate(concat.input)]
        if shape[:2] != [0, 0] or any(not value for value in shape[2:]):  # a constant 0 or a run-time length
            continue
        name = f"{node.name}_bp_shape"
        graph.initializer.append(numpy_helper.from_array(np.array(shape, np.int64), name))
        node.input[1] = name
        count += 1
    return count


def rotary_half(config: dict) -> int | None:
    """Half the rotated dimensions when the rotary embedding turns whole heads (head_dim / 2), else None."""
    heads = config.get("num_attention_heads")
    head_dim = config.get("head_dim") or (config["hidden_size"] // heads if heads and "hidden_size" in config else 0)
    if not head_dim or head_dim % 2 or config.get("partial_rotary_factor", 1.0) != 1.0 \
            or config.get("rotary_pct", 1.0) != 1.0:
        return None
    return head_dim // 2


def _slice_bounds(links: Links, node) -> tuple | None:
    """(start, end, axis) of a Slice over one constant axis with step 1, start and end each a constant int or else
    the tensor's name; None otherwise."""
    if node is None or node.op_type != "Slice" or len(node.input) < 4:
        return None
    if len(node.input) > 4 and node.input[4] and links.scalar(node.input[4]) != 1:
        return None
    axis = links.scalar(node.input[3])
    if axis is None:
        return None
    start, end = (links.scalar(name) for name in node.input[1:3])
    return node.input[1] if start is None else start, node.input[2] if end is None else end, axis


def _rotate_half_of(links: Links, concat) -> str | None:
    """x when `concat` is Concat(-x[..., half:], x[..., :half], axis=-1) with half a length divided by 2
    (transformers' rotate_half, as traced), else None."""
    if concat is None or concat.op_type != "Concat" or len(concat.input) != 2:
        return None
    if next((a.i for a in concat.attribute if a.name == "axis"), None) not in (-1, 3):
        return None
    neg, first = links.producer(concat.input[0]), links.producer(concat.input[1])
    if neg is None or neg.op_type != "Neg":
        return None
    second = links.producer(neg.input[0])
    low, high = _slice_bounds(links, first), _slice_bounds(links, second)
    if low is None or high is None or first.input[0] != second.input[0]:
        return None
    (low_start, low_end, low_axis), (high_start, _, high_axis) = low, high
    if low_start != 0 or {low_axis, high_axis} - {-1, 3} or not isinstance(low_end, str):
        return None
    middle = _peeled(links, low_end)
    divide = links.producer(middle)
    if middle != _peeled(links, high_start) or divide is None or divide.op_type != "Div":
        return None
    return first.input[0] if links.scalar(divide.input[1]) == 2 else None


def _peeled(links: Links, name) -> str | None:
    """The tensor under any Unsqueeze / Cast / Identity wrapping `name` (a half length: shape arithmetic)."""
    while isinstance(name, str) and (node := links.producer(name)) is not None \
            and node.op_type in ("Unsqueeze", "Cast", "Identity"):
        name = node.input[0]
    return name if isinstance(name, str) else None


def _rotary_parts(links: Links, add) -> tuple[str, str, str] | None:
    """(x, cos, sin) when `add` is x·Unsqueeze(cos, 1) + rotate_half(x)·Unsqueeze(sin, 1), else None."""
    products = [links.producer(name) for name in add.input]
    if len(products) != 2 or any(p is None or p.op_type != "Mul" for p in products):
        return None
    for plain, rotated in (products, products[::-1]):
        for x_side in (0, 1):
            x = plain.input[x_side]
            for r_side in (0, 1):
                if _rotate_half_of(links, links.producer(rotated.input[r_side])) != x:
                    continue
                cos, sin = (_unsqueezed_at_1(links, n) for n in (plain.input[1 - x_side], rotated.input[1 - r_side]))
                if cos and sin:
                    return x, cos, sin
    return None


def _unsqueezed_at_1(links: Links, name: str) -> str | None:
    node = links.producer(name)
    if node is None or node.op_type != "Unsqueeze" or len(node.input) < 2:
        return None
    return node.input[0] if links.scalar(node.input[1]) == 1 else None


def rotary_embedding(graph, half: int, links: Links | None = None) -> int:
    """Each x·cos + rotate_half(x)·sin over x [batch, heads, sequence, 2·half] becomes RotaryEmbedding(x, cos[…, :half],
    sin[…, :half]) (opset 23, no position ids: the tables are [batch, sequence, half], every row's own). Returns how
    many."""
    from onnx import helper, numpy_helper

    links = links or Links(graph)
    halves: dict[str, str] = {}  # a cos / sin table → its first half
    replaced: dict[str, object] = {}
    for node in graph.node:
        parts = _rotary_parts(links, node) if node.op_type == "Add" else None
        if parts is None:
            continue
        x, cos, sin = parts
        for table in (cos, sin):
            halves.setdefault(table, f"{table}_bp_half")
        replaced[node.name] = helper.make_node("RotaryEmbedding", [x, halves[cos], halves[sin]], list(node.output),
                                               name=f"{node.name}_bp_rotary")
    if not replaced:
        return 0
    graph.initializer.extend([numpy_helper.from_array(np.array([value], np.int64), name) for name, value in
                              (("bp_rotary_start", 0), ("bp_rotary_end", half), ("bp_rotary_axis", -1))])
    slices = {table: helper.make_node("Slice", [table, "bp_rotary_start", "bp_rotary_end", "bp_rotary_axis"], [first],
                                      name=f"{first}_slice") for table, first in halves.items()}
    nodes = [slices[t] for t in halves if links.producer(t) is None]  # tables that are graph inputs: sliced first
    for node in graph.node:
        nodes.append(replaced.get(node.name, node))
        nodes += [slices[out] for out in node.output if out in slices]
    graph.ClearField("node")
    graph.node.extend(nodes)
    return len(replaced)


def drop_dead(graph) -> None:
    """Remove the nodes nothing leading to an output uses any more, then the graph inputs and initializers nothing
    reads."""
    needed = {o.name for o in graph.output}
    kept = []
    for node in reversed(graph.node):
        if any(out in needed for out in node.output):
            kept.append(node)
            needed.update(node.input)
    graph.ClearField("node")
    graph.node.extend(reversed(kept))
    for info in [i for i in graph.input if i.name not in needed]:
        graph.input.remove(info)
    for init in [i for i in graph.initializer if i.name not in needed]:
        graph.initializer.remove(init)
