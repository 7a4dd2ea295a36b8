"""Weight transforms of a prepared fp32 decoder graph, one per precision variant (models.variants uses them).

- `fp16`: every large float initializer stored as float16 and cast back to float32 where it is read (weight-only:
  activations, KV cache and logits stay float32; ONNX Runtime folds the casts when a session loads it).
- `int8`: ONNX Runtime's dynamic quantization (`quantize_dynamic`, per-channel int8 weights, MatMul only).
- `int4`: ONNX Runtime's stock 4-bit weight-only quantizer, as `MatMulNBitsQuantizer` does it (its C++ kernel
  `quantize_matmul_4bits`: blocks of 32 along K, asymmetric, integer zero points), on every MatMul with a constant
  weight (lm_head included).
- `q4_1`: the GGUF's own blocks, run exactly. A Q4_1 block of 32 weights is w = d·q + m (q in 0..15); MatMulNBits
  with no zero point computes d·(q − 8), so each MatMul becomes MatMulNBits(A) + blocksum(A) · (m + 8d), where
  blocksum(A) sums A over each block of 32 along K: the fp32 product of the dequantized weights to ~1e-6. The
  tied lm_head is the GGUF's Q8_0 (w = d·q, q int8); it stays the fp32 MatMul of those values dequantized
  (exact already). MatMulNBits with 8 bits (zero point 128 on q + 128, `lm_head_q8=True`) is exact too, but
  ONNX Runtime 1.31's CPU kernel for it at accuracy_level 0 took 146 ms for the 576 x 49152 lm_head of one row
  against the fp32 MatMul's 6.7 ms (accuracy_level 4 is fast but rounds activations to int8: off by 0.27).
  Each GGUF matrix is matched to its ONNX MatMul by name and to its rows by
  value (llama.cpp permutes q/k rows for its rope; transformers undoes it), and must reproduce the fp32 graph's
  weights bit for bit, else the preparation stops.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np

MIN_FP16_ELEMENTS = 1024
BLOCK = 32
MS_DOMAIN = "com.microsoft"
PROJECTIONS = {
    "self_attn/q_proj": "attn_q",
    "self_attn/k_proj": "attn_k",
    "self_attn/v_proj": "attn_v",
    "self_attn/o_proj": "attn_output",
    "mlp/gate_proj": "ffn_gate",
    "mlp/up_proj": "ffn_up",
    "mlp/down_proj": "ffn_down",
}
LOGITS = "logits"
Tick = Callable[[float, str], None]


class QuantizeError(ValueError):
    pass


def initializers(graph) -> dict:
    return {i.name: i for i in graph.initializer}


def weight_matmuls(graph) -> list:
    """MatMul nodes whose second input is a 2-D float initializer (the weights [K, N])."""
    inits = initializers(graph)
    found = []
    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in inits:
            init = inits[node.input[1]]
            if len(init.dims) == 2 and init.data_type == 1:
                found.append(node)
    return found


def to_fp16(model, tick: Tick | None = None):
    """Weight-only fp16: large float32 initializers stored as float16, each read through a Cast to float32."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    casts = []
    for index, init in enumerate(list(graph.initializer)):
        if init.data_type != TensorProto.FLOAT or int(np.prod(init.dims)) < MIN_FP16_ELEMENTS:
            continue
        values = numpy_helper.to_array(init)
        name = init.name
        graph.initializer.remove(init)
        graph.initializer.append(numpy_helper.from_array(values.astype(np.float16), f"{name}_fp16"))
        casts.append(helper.make_node("Cast", [f"{name}_fp16"], [name], name=f"bp_fp16_{index}", to=TensorProto.FLOAT))
        if tick is not None:
            tick(index / len(graph.initializer), f"fp16: {name}")
    for cast in reversed(casts):
        graph.node.insert(0, cast)
    return model


def to_int4_stock(model, tick: Tick | None = None):
    """ONNX Runtime's stock 4-bit quantization of every constant-weight MatMul (MatMulNBitsQuantizer's defaults
    for block 32, asymmetric: its kernel, its packing, its node)."""
    from onnx import numpy_helper
    from onnxruntime.capi._pybind_state import quantize_matmul_4bits

    graph = model.graph
    inits = initializers(graph)
    nodes = weight_matmuls(graph)
    for count, node in enumerate(nodes):
        weight = numpy_helper.to_array(inits[node.input[1]]).astype(np.float32)
        rows, cols = weight.shape
        blocks = (rows + BLOCK - 1) // BLOCK
        if blocks * BLOCK != rows:
            weight = np.pad(weight, ((0, blocks * BLOCK - rows), (0, 0)))
        packed = np.zeros((cols, blocks, BLOCK // 2), dtype=np.uint8)
        zero_points = np.zeros((cols, (blocks + 1) // 2), dtype=np.uint8)
        scales = np.zeros((cols, blocks), dtype=np.float32)
        quantize_matmul_4bits(packed, np.ascontiguousarray(weight), scales, zero_points, BLOCK, cols, rows, False)
        base = node.input[1]
        graph.initializer.extend(
            [
                numpy_helper.from_array(packed, f"{base}_Q4"),
                numpy_helper.from_array(scales, f"{base}_scales"),
                numpy_helper.from_array(zero_points, f"{base}_zero_points"),
            ]
        )
        replace_node(
            graph,
            node,
            [matmul_nbits([node.input[0], f"{base}_Q4", f"{base}_scales", f"{base}_zero_points"], list(node.output),
                          f"{node.name}_Q4", rows, cols, bits=4)],
        )
        if tick is not None:
            tick((count + 1) / len(nodes), f"int4: {node.name}")
    drop_unused_initializers(graph)
    add_ms_opset(model)
    return model


def to_int8_dynamic(source: Path, target: Path) -> None:
    """ONNX Runtime's dynamic quantization: per-channel int8 weights, MatMul only (activations quantized per
    call). Written to target (weights in target's folder)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        source,
        target,
        op_types_to_quantize=["MatMul"],
        per_channel=True,
        weight_type=QuantType.QInt8,
        use_external_data_format=True,
    )


def gguf_q4_1_rows(raw: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A Q4_1 tensor's raw bytes [N, K/32 · 20] → (q [N, K/32, 32] uint8 in 0..15, d [N, K/32], m [N, K/32])
    as float32. GGUF's block: d (f16), m (f16), 16 bytes; element j is byte j's low nibble, j + 16 its high."""
    n = raw.shape[0]
    blocks = raw.reshape(n, k // BLOCK, 20)
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    m = blocks[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float32)
    qs = blocks[..., 4:]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)
    return q, d, m


def gguf_q8_0_rows(raw: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """A Q8_0 tensor's raw bytes [N, K/32 · 34] → (q [N, K/32, 32] int8, d [N, K/32] float32)."""
    n = raw.shape[0]
    blocks = raw.reshape(n, k // BLOCK, 34)
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    q = blocks[..., 2:].copy().view(np.int8)
    return q, d


def pack_nibbles(q: np.ndarray) -> np.ndarray:
    """[N, blocks, 32] values 0..15 → MatMulNBits' 4-bit blob [N, blocks, 16]: element 2i low nibble, 2i + 1 high."""
    return (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)


def matmul_nbits(inputs: list[str], outputs: list[str], name: str, k: int, n: int, bits: int,
                 accuracy_level: int = 0):
    """ONNX Runtime's MatMulNBits node over blocks of BLOCK along K: A [.., K] × the packed weights [K, N].
    accuracy_level 0 keeps the activations fp32 (exact against the dequantized weights); 4 rounds them to int8 per
    block, as llama.cpp's own Q8_0 / Q4 kernels do (faster; near-ties may flip)."""
    from onnx import helper

    return helper.make_node("MatMulNBits", inputs, outputs, name=name, domain=MS_DOMAIN, K=k, N=n, bits=bits,
                            block_size=BLOCK, accuracy_level=accuracy_level)


def q4_1_nodes(node, base: str, q, d, m, k: int, n: int, sums: str | None) -> tuple[list, list, str]:
    """MatMulNBits(A) + blocksum(A) · (m + 8d) for one MatMul: (nodes, initializers, blocksum's name). `sums`:
    the block sums of this A already computed for an earlier MatMul (q, k and v read one input, as do gate and
    up), else they are computed here."""
    from onnx import helper, numpy_helper

    a, out = node.input[0], node.output[0]
    inits = [
        numpy_helper.from_array(pack_nibbles(q), f"{base}_q4_1"),
        numpy_helper.from_array(np.ascontiguousarray(d), f"{base}_q4_1_scales"),
        numpy_helper.from_array(np.ascontiguousarray((m + 8.0 * d).T), f"{base}_q4_1_offsets"),
    ]
    nodes = [matmul_nbits([a, f"{base}_q4_1", f"{base}_q4_1_scales"], [f"{out}_q4_1_main"], f"{node.name}_q4_1", k, n,
                          bits=4)]
    if sums is None:
        sums, shape, axis = f"{out}_q4_1_sums", f"{out}_q4_1_blocks", f"{out}_q4_1_axis"
        inits += [
            numpy_helper.from_array(np.array([0, 0, k // BLOCK, BLOCK], np.int64), shape),
            numpy_helper.from_array(np.array([-1], np.int64), axis),
        ]
        nodes += [
            helper.make_node("Reshape", [a, shape], [f"{out}_q4_1_a_blocks"], name=f"{node.name}_q4_1_r"),
            helper.make_node(
                "ReduceSum", [f"{out}_q4_1_a_blocks", axis], [sums], name=f"{node.name}_q4_1_sum", keepdims=0
            ),
        ]
    nodes += [
        helper.make_node("MatMul", [sums, f"{base}_q4_1_offsets"], [f"{out}_q4_1_fix"], name=f"{node.name}_q4_1_c"),
        helper.make_node("Add", [f"{out}_q4_1_main", f"{out}_q4_1_fix"], [out], name=f"{node.name}_q4_1_add"),
    ]
    return nodes, inits, sums


def q8_0_nodes(node, base: str, q, d, k: int, n: int, accuracy_level: int = 0) -> tuple[list, list]:
    """MatMulNBits with 8 bits and its default zero point 128 on q + 128: d · q exactly."""
    from onnx import numpy_helper

    stored = (q.astype(np.int16) + 128).astype(np.uint8)
    inits = [
        numpy_helper.from_array(stored, f"{base}_q8_0"),
        numpy_helper.from_array(np.ascontiguousarray(d), f"{base}_q8_0_scales"),
    ]
    nodes = [matmul_nbits([node.input[0], f"{base}_q8_0", f"{base}_q8_0_scales"], list(node.output),
                          f"{node.name}_q8_0", k, n, bits=8, accuracy_level=accuracy_level)]
    return nodes, inits


def round_half_away(x: np.ndarray) -> np.ndarray:
    """C's roundf (halves away from zero), which ggml's reference quantizers use; numpy's round is to even."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def quantize_q8_0(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """llama.cpp's quantize_row_q8_0_ref over rows [N, K] (K a multiple of 32): per block of 32, d = amax / 127
    stored as fp16 and q = roundf(x / d) in int8 (computed with the fp32 d, as ggml does). → (q [N, K/32, 32] int8,
    d [N, K/32] float32 holding the fp16 values)."""
    n, k = weight.shape
    x = weight.astype(np.float32).reshape(n, k // BLOCK, BLOCK)
    d = np.abs(x).max(axis=-1) / np.float32(127)
    inverse = np.divide(np.float32(1), d, out=np.zeros_like(d), where=d != 0)
    q = round_half_away(x * inverse[..., None]).astype(np.int8)
    return q, d.astype(np.float16).astype(np.float32)


def quantize_q4_0(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """llama.cpp's quantize_row_q4_0_ref over rows [N, K]: per block of 32, the value of largest magnitude `max`,
    d = max / −8 stored as fp16, q = min(15, trunc(x / d + 8.5)) in 0..15; w = d · (q − 8). → (q [N, K/32, 32]
    uint8, d [N, K/32] float32 holding the fp16 values)."""
    n, k = weight.shape
    x = weight.astype(np.float32).reshape(n, k // BLOCK, BLOCK)
    at = np.abs(x).argmax(axis=-1)
    peak = np.take_along_axis(x, at[..., None], axis=-1)[..., 0]
    d = peak / np.float32(-8)
    inverse = np.divide(np.float32(1), d, out=np.zeros_like(d), where=d != 0)
    q = np.minimum(15, np.trunc(x * inverse[..., None] + np.float32(8.5))).astype(np.uint8)
    return q, d.astype(np.float16).astype(np.float32)


def q8_0_folded_nodes(node, base: str, q, d, k: int, n: int) -> tuple[list, list]:
    """The Q8_0 blocks stored as int8 and fp16-valued scales, dequantized in the graph (Cast · scale, reshaped and
    transposed to [K, N]) into the fp32 MatMul: every input is constant, so ONNX Runtime folds it into the fp32
    weights d · q when the session loads (exact: an 11-bit scale times a 7-bit integer fits float32), and the
    step runs at fp32's speed. MatMulNBits' 8-bit kernel at accuracy level 0 took ~8x fp32's step here."""
    from onnx import TensorProto, helper, numpy_helper

    name = node.name
    inits = [
        numpy_helper.from_array(np.ascontiguousarray(q), f"{base}_q8_0"),
        numpy_helper.from_array(np.ascontiguousarray(d[..., None]), f"{base}_q8_0_scales"),
        numpy_helper.from_array(np.array([n, k], np.int64), f"{base}_q8_0_shape"),
    ]
    nodes = [
        helper.make_node("Cast", [f"{base}_q8_0"], [f"{base}_q8_0_f"], name=f"{name}_q8_0_cast", to=TensorProto.FLOAT),
        helper.make_node("Mul", [f"{base}_q8_0_f", f"{base}_q8_0_scales"], [f"{base}_q8_0_w"], name=f"{name}_q8_0_mul"),
        helper.make_node("Reshape", [f"{base}_q8_0_w", f"{base}_q8_0_shape"], [f"{base}_q8_0_nk"],
                         name=f"{name}_q8_0_reshape"),
        helper.make_node("Transpose", [f"{base}_q8_0_nk"], [f"{base}_q8_0_kn"], name=f"{name}_q8_0_t", perm=[1, 0]),
        helper.make_node("MatMul", [node.input[0], f"{base}_q8_0_kn"], list(node.output), name=name),
    ]
    return nodes, inits


def q4_0_nodes(node, base: str, q, d, k: int, n: int, accuracy_level: int = 0) -> tuple[list, list]:
    """MatMulNBits with 4 bits and its default zero point 8: d · (q − 8), Q4_0 exactly."""
    from onnx import numpy_helper

    inits = [
        numpy_helper.from_array(pack_nibbles(q), f"{base}_q4_0"),
        numpy_helper.from_array(np.ascontiguousarray(d), f"{base}_q4_0_scales"),
    ]
    nodes = [matmul_nbits([node.input[0], f"{base}_q4_0", f"{base}_q4_0_scales"], list(node.output),
                          f"{node.name}_q4_0", k, n, bits=4, accuracy_level=accuracy_level)]
    return nodes, inits


def quantize_q4_1(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """llama.cpp's quantize_row_q4_1_ref over rows [N, K]: per block of 32, d = (max − min) / 15 and m = min, both
    stored as fp16, q = min(15, trunc((x − min) / d + 0.5)) in 0..15 (with the fp32 d and min); w = d · q + m.
    → (q [N, K/32, 32] uint8, d, m [N, K/32] float32 holding the fp16 values)."""
    n, k = weight.shape
    x = weight.astype(np.float32).reshape(n, k // BLOCK, BLOCK)
    low, high = x.min(axis=-1), x.max(axis=-1)
    d = (high - low) / np.float32(15)
    inverse = np.divide(np.float32(1), d, out=np.zeros_like(d), where=d != 0)
    q = np.minimum(15, np.trunc((x - low[..., None]) * inverse[..., None] + np.float32(0.5))).astype(np.uint8)
    return q, d.astype(np.float16).astype(np.float32), low.astype(np.float16).astype(np.float32)


BLOCK_SCHEMES = ("q8_0", "q4_0", "q4_1")


def to_blocks(model, scheme: str, tick: Tick | None = None, accuracy_level: int = 0):
    """llama.cpp's `scheme` (q8_0 | q4_0) blocks of every constant-weight MatMul of the graph, run through
    MatMulNBits (weight-only at accuracy_level 0: exact against the dequantized blocks). The lm_head (the
    tied embedding) is always Q8_0, as llama.cpp never puts that tensor at 4 bits; it stays an fp32 MatMul of its
    Q8_0 values (ONNX Runtime's 8-bit kernel at level 0 is ~20x slower than fp32 for a 49152-wide head).
    Returns (model, report): matrices by kind and the largest |dequantized − original weight|."""
    from onnx import numpy_helper

    if scheme not in BLOCK_SCHEMES:
        raise ValueError(f"unknown block scheme {scheme!r}; allowed {', '.join(BLOCK_SCHEMES)}")
    graph = model.graph
    inits = initializers(graph)
    nodes = weight_matmuls(graph)
    report = {"scheme": scheme, "accuracy_level": accuracy_level, "q8_0": 0, "q4_0": 0, "q4_1": 0,
              "lm_head": "q8_0 values, fp32 MatMul", "max_abs_weight_change": 0.0}
    block_sums: dict[str, str] = {}  # q4_1: an input's block sums, shared by the MatMuls that read it
    for count, node in enumerate(nodes):
        weight = numpy_helper.to_array(inits[node.input[1]]).astype(np.float32)  # [K, N]
        k, n = weight.shape
        if k % BLOCK:
            raise QuantizeError(f"{node.name}: K = {k} is not a multiple of {BLOCK}")
        base = node.input[1]
        if LOGITS in node.output:
            q, d = quantize_q8_0(weight.T)
            values = (d[..., None] * q).reshape(n, k)
            inits[base].CopyFrom(numpy_helper.from_array(np.ascontiguousarray(values.T), base))
            report["q8_0"] += 1
        else:
            if scheme == "q8_0":
                q, d = quantize_q8_0(weight.T)
                values = (d[..., None] * q).reshape(n, k)
                if accuracy_level == 0:  # weight-only: folded into fp32 weights at load (fp32's speed, exact)
                    new_nodes, new_inits = q8_0_folded_nodes(node, base, q, d, k, n)
                else:  # MatMulNBits rounds the activations to int8 per block, as llama.cpp's Q8_0 kernel does
                    new_nodes, new_inits = q8_0_nodes(node, base, q, d, k, n, accuracy_level)
            elif scheme == "q4_0":
                q, d = quantize_q4_0(weight.T)
                values = (d[..., None] * (q.astype(np.float32) - 8)).reshape(n, k)
                new_nodes, new_inits = q4_0_nodes(node, base, q, d, k, n, accuracy_level)
            else:
                q, d, m = quantize_q4_1(weight.T)
                values = (d[..., None] * q + m[..., None]).reshape(n, k)
                new_nodes, new_inits, sums = q4_1_nodes(node, base, q, d, m, k, n, block_sums.get(node.input[0]))
                block_sums[node.input[0]] = sums
            graph.initializer.extend(new_inits)
            replace_node(graph, node, new_nodes)
            report[scheme] += 1
        report["max_abs_weight_change"] = max(report["max_abs_weight_change"], float(np.max(np.abs(values - weight.T))))
        if tick is not None:
            tick((count + 1) / len(nodes), f"{scheme}: {node.name}")
    drop_unused_initializers(graph)
    add_ms_opset(model)
    return model, report


def gguf_name_for(node) -> str | None:
    """The GGUF tensor a MatMul of optimum's Llama export reads (None when it is not one of them)."""
    if LOGITS in node.output:
        return "token_embd.weight"
    match = re.match(r"/model/layers\.(\d+)/(\w+/\w+)/MatMul$", node.name)
    if match and match.group(2) in PROJECTIONS:
        return f"blk.{match.group(1)}.{PROJECTIONS[match.group(2)]}.weight"
    return None


def row_order(exported: np.ndarray, dequantized: np.ndarray, what: str) -> np.ndarray:
    """order[i] = the GGUF row that is the exported matrix's row i, bit for bit (else QuantizeError)."""
    index = {row.tobytes(): i for i, row in enumerate(dequantized)}
    order = np.array([index.get(row.tobytes(), -1) for row in exported])
    if (order < 0).any():
        bad = int((order < 0).sum())
        raise QuantizeError(
            f"{what}: {bad} of {len(order)} rows of the ONNX weights are not the GGUF's dequantized rows"
        )
    return order


def to_q4_1_exact(model, gguf_path: Path, tick: Tick | None = None, lm_head_q8: bool = False):
    """The GGUF's Q4_1 blocks (and with `lm_head_q8` its Q8_0 lm_head) run exactly (see the module docstring).
    Returns (model, report): report counts the matrices replaced by kind, the ones kept in fp32, and the largest
    |dequantized − fp32 weight| (0.0 expected)."""
    from gguf import GGUFReader
    from gguf.quants import dequantize
    from onnx import numpy_helper

    reader = GGUFReader(str(gguf_path))
    tensors = {t.name: t for t in reader.tensors}
    graph = model.graph
    inits = initializers(graph)
    nodes = weight_matmuls(graph)
    report = {"q4_1": 0, "q8_0": 0, "kept_fp32": [], "max_abs_weight_diff": 0.0}
    block_sums: dict[str, str] = {}  # input name -> its block sums (nodes are visited in graph order)
    for count, node in enumerate(nodes):
        name = gguf_name_for(node)
        tensor = tensors.get(name) if name else None
        kind = tensor.tensor_type.name if tensor is not None else None
        if kind not in ("Q4_1", "Q8_0") or (kind == "Q8_0" and not lm_head_q8):
            report["kept_fp32"].append(node.name)
            continue
        exported = numpy_helper.to_array(inits[node.input[1]]).T  # [N, K]
        n, k = exported.shape
        raw = np.asarray(tensor.data)
        if raw.shape[0] != n or k % BLOCK:
            raise QuantizeError(f"{name} ({raw.shape}) does not fit {node.name}'s weights [{k}, {n}]")
        order = row_order(exported, dequantize(raw, tensor.tensor_type), f"{node.name} ← {name}")
        raw = raw[order]
        base = node.input[1]
        if kind == "Q4_1":
            q, d, m = gguf_q4_1_rows(raw, k)
            values = (d[..., None] * q + m[..., None]).reshape(n, k)
            new_nodes, new_inits, sums = q4_1_nodes(node, base, q, d, m, k, n, block_sums.get(node.input[0]))
            block_sums[node.input[0]] = sums
        else:
            q, d = gguf_q8_0_rows(raw, k)
            values = (d[..., None] * q).reshape(n, k)
            new_nodes, new_inits = q8_0_nodes(node, base, q, d, k, n)
        diff = float(np.max(np.abs(values - exported)))
        report["max_abs_weight_diff"] = max(report["max_abs_weight_diff"], diff)
        graph.initializer.extend(new_inits)
        replace_node(graph, node, new_nodes)
        report[kind.lower()] += 1
        if tick is not None:
            tick((count + 1) / len(nodes), f"q4_1: {node.name} ← {name} ({kind})")
    if report["q4_1"] == 0:
        raise QuantizeError(f"no MatMul of the graph matched a Q4_1 tensor of {gguf_path.name}")
    drop_unused_initializers(graph)
    add_ms_opset(model)
    return model, report


def replace_node(graph, node, replacements: list) -> None:
    index = list(graph.node).index(node)
    graph.node.remove(node)
    for offset, new in enumerate(replacements):
        graph.node.insert(index + offset, new)


def drop_unused_initializers(graph) -> None:
    used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    for init in [i for i in graph.initializer if i.name not in used]:
        graph.initializer.remove(init)


def add_ms_opset(model) -> None:
    from onnx import helper

    if not any(o.domain == MS_DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
