"""The depth split's arrays on ONNX Runtime: what the embedding, each layer's attention (each head) and MLP add to
the residual stream at the last position, and the final norm's scale there (decoding.analysis.why.depth_split
turns them into shares of logit(A) − logit(B)).

    depth = DepthGraph(model_dir, device="auto")
    split = depth.split(token_ids, a, b)          # a DepthSplit

No second export: the decoding model's own graph (model.onnx, weights left external and shared) with more
outputs, found by walking back from the logits: lm_head ← (last-position Slice) ← the final norm Mul(g, r / rms)
← the residual stream, a chain of Adds each adding a branch made by a MatMul with a weight (o_proj, then
down_proj, per layer) to the residual, down to the embedding Gather. A head's output is its slice of o_proj's
input through its rows of the o_proj weight (o_proj has no bias: the heads add up to the layer's attention).
Graphs of another shape (a precision variant's MatMulNBits, a post-attention norm as in Gemma) are refused with
the reason: ValueError from DepthGraph.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from decoding.analysis.why import DepthSplit, depth_split
from runtime.decoder import INT_TYPES
from runtime.model_files import read_json
from runtime.session import create_session

MODEL_FILE = "model.onnx"


@dataclass(frozen=True)
class Weight:
    """A MatMul's weight: an initializer, or the transpose of one (an export's tied lm_head, before ORT folds it)."""

    initializer: str
    transposed: bool = False


@dataclass(frozen=True)
class Layer:
    attention: str  # the tensor o_proj writes (added to the residual)
    heads: str  # o_proj's input: every head's output side by side [.., H * head_dim]
    o_proj: Weight  # its weight [H * head_dim, D]
    mlp: str  # the tensor down_proj writes


@dataclass(frozen=True)
class Plan:
    embedding: str
    layers: list[Layer]
    rms: str  # the final norm's sqrt(mean(r²) + eps)
    norm_weight: str
    lm_head: Weight  # the lm_head weight [D, vocab]


class DepthGraph:
    """The decoding graph of a prepared model folder with the depth split's outputs, on `device`."""

    def __init__(self, model_dir: str | Path, device: str = "auto", threads: int | None = None):
        import onnx
        from onnx import numpy_helper

        self.model_dir = Path(model_dir)
        model = onnx.load(str(self.model_dir / MODEL_FILE), load_external_data=False)
        config = read_json(self.model_dir / "config.json")
        self.plan = find_plan(model.graph, config)
        initializers = {i.name: i for i in model.graph.initializer}
        load = lambda name: numpy_helper.to_array(initializers[name], base_dir=str(self.model_dir))  # noqa: E731
        matrix = lambda weight: load(weight.initializer).T if weight.transposed else load(weight.initializer)  # noqa: E731
        self.o_proj = [matrix(layer.o_proj) for layer in self.plan.layers]
        self.norm_weight = load(self.plan.norm_weight)
        self.lm_head = matrix(self.plan.lm_head)
        self.heads = int(config.get("num_attention_heads") or 0)
        if not self.heads or self.o_proj[0].shape[0] % self.heads:
            raise ValueError(f"{self.model_dir.name}: o_proj's input ({self.o_proj[0].shape[0]}) does not split "
                             f"into num_attention_heads = {self.heads} heads")
        self.outputs = ["logits", self.plan.embedding, self.plan.rms] + [
            name for layer in self.plan.layers for name in (layer.attention, layer.heads, layer.mlp)]
        graph_outputs = {o.name for o in model.graph.output}
        for name in self.outputs:
            if name not in graph_outputs:
                model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
        self.session, self.placement = create_session(model.SerializeToString(), device, threads, spinning=False,
                                                      external_data_dir=self.model_dir)
        self.inputs = {i.name: i for i in self.session.get_inputs()}

    @property
    def vocab_size(self) -> int:
        return int(self.lm_head.shape[1])

    def split(self, token_ids: Sequence[int], a: int, b: int) -> DepthSplit:
        """The depth split of logit(a) − logit(b) after the last of token_ids."""
        values = dict(zip(self.outputs, self.session.run(self.outputs, self._feed(token_ids)), strict=True))
        logits = values["logits"][0, -1]
        last = lambda name: values[name][0, -1]  # noqa: E731
        attention = np.stack([last(layer.attention) for layer in self.plan.layers])
        mlp = np.stack([last(layer.mlp) for layer in self.plan.layers])
        heads = np.stack([self._head_outputs(last(layer.heads), weight)
                          for layer, weight in zip(self.plan.layers, self.o_proj, strict=True)])
        direction = self.lm_head[:, a].astype(np.float64) - self.lm_head[:, b]
        return depth_split(float(logits[a]) - float(logits[b]), last(self.plan.embedding), attention, heads, mlp,
                           self.norm_weight, float(last(self.plan.rms).reshape(-1)[0]), direction)

    def _head_outputs(self, heads_in: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """[H, D]: head h's slice of o_proj's input through its rows of the weight."""
        width = weight.shape[0] // self.heads
        parts = heads_in.astype(np.float64).reshape(self.heads, 1, width)
        return (parts @ weight.astype(np.float64).reshape(self.heads, width, -1))[:, 0]

    def _feed(self, token_ids: Sequence[int]) -> dict[str, np.ndarray]:
        ids = np.asarray(token_ids, dtype=np.int64).reshape(1, -1)
        if ids.min() < 0 or ids.max() >= self.vocab_size:
            raise ValueError(f"token ids must be in [0, {self.vocab_size}), got {ids.min()}..{ids.max()}")
        feed = {}
        for name, info in self.inputs.items():
            if name == "input_ids":
                feed[name] = ids.astype(INT_TYPES[info.type])
            elif name == "attention_mask":
                feed[name] = np.ones_like(ids, dtype=INT_TYPES[info.type])
            elif name == "position_ids":
                feed[name] = np.arange(ids.shape[1], dtype=INT_TYPES[info.type])[None]
            elif name.startswith("past_key_values."):
                shape = [1, info.shape[1], 0, info.shape[3]]
                feed[name] = np.zeros(shape, np.float16 if info.type == "tensor(float16)" else np.float32)
            else:
                raise ValueError(f"{self.model_dir.name}: the depth split does not know the input {name!r}")
        return feed


def find_plan(graph, config: dict) -> Plan:
    """Where the depth split's tensors are in a decoding graph (see the module docstring); ValueError saying
    which part of the pattern is missing."""
    producers = {out: node for node in graph.node for out in node.output}
    weights = {i.name for i in graph.initializer}
    head = producers.get("logits")
    if not _is_projection(head, producers, weights):
        raise ValueError(_refusal("the logits are not a MatMul of a float weight (lm_head)"))
    normed = producers.get(head.input[0])
    if normed is not None and normed.op_type in ("Slice", "Gather"):  # the last-position edit
        normed = producers.get(normed.input[0])
    residual, rms, norm_weight = _final_norm(normed, producers, weights)
    layers = _residual_chain(residual, producers, weights, int(config.get("num_hidden_layers") or 0))
    embedding = layers.pop()
    return Plan(embedding, layers, rms, norm_weight, _weight(head.input[1], producers, weights))


def _final_norm(node, producers, weights) -> tuple[str, str, str]:
    """(residual, rms, weight) of the final RMS norm: Mul(weight, Div(r, Sqrt(...))) as ORT's basic optimisations
    leave it, or Mul(weight, Mul(r, Div(1, Sqrt(...)))) as exported (Casts between them skipped)."""
    if node is None or node.op_type != "Mul":
        raise ValueError(_refusal("no RMS norm before lm_head"))
    resolved = [_before_casts(name, producers) for name in node.input]
    weight = next((name for name in resolved if name in weights), None)
    scaled = next((producers.get(name) for name in resolved if name not in weights), None)
    if weight is None or scaled is None or scaled.op_type not in ("Div", "Mul"):
        raise ValueError(_refusal("the final norm is not weight × (r / rms)"))
    if scaled.op_type == "Div":
        residual, divisor = scaled.input
    else:
        inverse = next((n for n in map(lambda name: _producer(name, producers), scaled.input)
                        if n is not None and n.op_type == "Div"), None)
        if inverse is None:
            raise ValueError(_refusal("the final norm is not weight × r × (1 / rms)"))
        residual = next(name for name in scaled.input if name != inverse.output[0])
        divisor = inverse.input[1]
    sqrt = _producer(divisor, producers)
    if sqrt is None or sqrt.op_type != "Sqrt":
        raise ValueError(_refusal("the final norm's scale is not a Sqrt"))
    return _before_casts(residual, producers), sqrt.output[0], weight


def _producer(name: str, producers):
    """The node that makes `name`, looking through Casts (the export's float32-to-float32 ones) and Identities
    (its shared weights)."""
    return producers.get(_before_casts(name, producers))


def _before_casts(name: str, producers) -> str:
    while (node := producers.get(name)) is not None and node.op_type in ("Cast", "Identity"):
        name = node.input[0]
    return name


def _residual_chain(residual: str, producers, weights, layers: int) -> list:
    """Layers first to last, then the embedding tensor last: walking the residual's Adds back to the Gather."""
    branches = []
    while True:
        residual = _before_casts(residual, producers)
        node = producers.get(residual)
        if node is not None and node.op_type == "Gather":
            break
        if node is None or node.op_type != "Add":
            raise ValueError(_refusal(f"the residual stream reaches a {node.op_type if node else 'graph input'}, "
                                      "not an Add or the embedding"))
        branch = next((producers.get(name) for name in node.input
                       if _is_projection(producers.get(name), producers, weights)), None)
        if branch is None:
            raise ValueError(_refusal(f"{node.name} adds no float MatMul projection (a quantised variant, or a "
                                      "norm after the branch)"))
        branches.append(branch)
        residual = next(name for name in node.input if name != branch.output[0])  # Casts skipped above
    if len(branches) != 2 * layers:
        raise ValueError(_refusal(f"{len(branches)} residual branches for {layers} layers (expected attention "
                                  "and MLP per layer)"))
    branches.reverse()
    chain: list = [Layer(attention.output[0], attention.input[0], _weight(attention.input[1], producers, weights),
                         mlp.output[0])
                   for attention, mlp in zip(branches[::2], branches[1::2], strict=True)]
    chain.append(residual)
    return chain


def _is_projection(node, producers, weights) -> bool:
    return node is not None and node.op_type == "MatMul" and _weight(node.input[1], producers, weights) is not None


def _weight(name: str, producers, weights) -> Weight | None:
    name = _before_casts(name, producers)
    if name in weights:
        return Weight(name)
    node = producers.get(name)
    perm = next((list(a.ints) for a in node.attribute if a.name == "perm"), [1, 0]) if node is not None else None
    if node is not None and node.op_type == "Transpose" and node.input[0] in weights and perm == [1, 0]:
        return Weight(node.input[0], transposed=True)
    return None


def _refusal(reason: str) -> str:
    return f"the depth split reads a float32 Llama-style decoding graph; this one differs: {reason}"
