"""Weight transforms of a prepared fp32 decoder graph, one per precision variant (models.variants uses them).

- `fp16`: every large float initializer stored as float16 and cast back to float32 where it is read (weight-only:
  activations, KV cache and logits stay float32; ONNX Runtime folds the casts when a session loads it).
- `int8`: dynamic quantization as ONNX Runtime's `quantize_dynamic` builds it (activations to uint8 per call, int8
  weights with a scale per output column, MatMul only; to_int8_dynamic).
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
- `gguf`: the same for every block type GGUF_BLOCKS decodes (to_gguf_exact; gemma-3-270m's Q4_K_M mixes 81 Q5_0,
  27 Q4_K, 10 Q8_0 and 9 Q6_K tensors). Each decoder (the bytes as gguf-py's quants.py lays them out) gives
  w = scale · value + offset per block with the scales computed as gguf-py computes them, so the blocks
  dequantize to gguf-py's result bit for bit. Q4_K's super-block of 256 is eight 32-blocks each with scale
  d · sc_j and offset −dmin · m_j: Q4_1's form, run as MatMulNBits + the block-sum correction. Q5_0 (d · (q − 16)),
  Q6_K (16-blocks, d · sc_i · (q − 32), sc_i int8) and Q8_0 are stored as int8 with their scales and dequantized
  by constant nodes that ORT folds into the fp32 weights at load (bit for bit; an 8-bit MatMulNBits at accuracy
  level 0 took ~10x fp32's time for a 640 x 2048 matrix of one row, 4 bits half of fp32's). The lm_head (the tied
  embedding, Q8_0) stays fp32, checked against its tensor dequantized. On gemma-3-270m every matrix equals the
  fp32 graph's, the single-row step is fp32's (0.97-0.99x; its fp32 lm_head of 262,144 x 640 dominates), the
  teacher-forced max KL vs fp32 is 1.4e-8 (folding Q4_K too: the logits bit for bit, no faster, more memory).
  llama.cpp does not permute gemma's q/k rows; the rows are matched by value either way.
- `ggml`: to_gguf_exact at accuracy level 4: every matrix, lm_head included, through MatMulNBits from the GGUF's own
  blocks (4-bit types with the block sums, Q8_0 / Q5_0 / Q6_K as 8-bit values at their block size), the activations
  rounded to int8 per block as llama.cpp's CPU kernels round them. Not bit for bit llama.cpp (its rounding paths
  differ), but of its kind and size: teacher-forced over the text set the default model's ggml is KL 0.0042 / same
  top 95.5 % off fp32, llama.cpp itself on the same GGUF 0.0037 / 95.8 % (gemma-3-270m: 0.0043 / 95.4 % and
  0.0086 / 93.6 %). A prefill and the same tokens read step by step differ by up to ~0.7 in a logit: a 1e-7 float
  difference at an int8 rounding edge becomes a whole step (llama.cpp's results depend on the batch size too).
- In all three, and in to_blocks' 4-bit schemes, sibling matrices of one form (MatMulNBits of 4 or of 8 bits at one
  block size) reading one input (q, k and v; gate and up) run as one MatMulNBits over their stacked rows and a Split
  (sibling_groups, emit_groups): one kernel launch, one block-sum correction and one activation rounding instead of
  two or three (single-row step on the default model: ggml 0.88–0.90x, 16.3 → 14.6 ms; q4_0, q4_1r 0.94x; each
  output the same product).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MIN_FP16_ELEMENTS = 1024
INT8_RANGE = 63  # to_int8_dynamic's weights: 7 bits, as MLAS' u8 x s8 kernel needs without VNNI
FIT_CANDIDATES = 8  # quantize_q8_0_fitted: the finest fractions of a block's spacing tried
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


def to_int8_dynamic(model, tick: Tick | None = None):
    """Dynamic int8, as ONNX Runtime's quantize_dynamic builds it: each constant-weight MatMul becomes
    DynamicQuantizeLinear (the activations to uint8 with one scale and zero point per call) → MatMulInteger with int8
    weights → Cast → times the two scales (ONNX Runtime fuses the chain into DynamicQuantizeMatMul at load). The
    weights are symmetric with a scale per output column, in −63..63 (quantize_dynamic's reduce_range): on a
    processor without VNNI, MLAS' u8 × s8 kernel sums pairs of products in int16, which saturates beyond 7-bit
    weights (a MatMulInteger with weights in ±127 was off by 37,000 of its int32 sums here; in ±64, exact).
    Written here because onnxruntime 1.31's quantize_dynamic with per_channel=True does not reduce the range (the
    default model came out at KL 14 nats), and per matrix costs KL 0.80 on the text set."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    inits = initializers(graph)
    nodes = weight_matmuls(graph)
    for count, node in enumerate(nodes):
        weight = numpy_helper.to_array(inits[node.input[1]]).astype(np.float32)  # [K, N]
        scale = np.abs(weight).max(axis=0) / np.float32(INT8_RANGE)
        scale = np.where(scale > 0, scale, np.float32(1)).astype(np.float32)
        base, a, out = node.input[1], node.input[0], node.output[0]
        graph.initializer.extend([
            numpy_helper.from_array(np.clip(round_half_away(weight / scale), -INT8_RANGE, INT8_RANGE).astype(np.int8),
                                    f"{base}_i8"),
            numpy_helper.from_array(np.zeros(scale.shape, np.int8), f"{base}_i8_zero"),
            numpy_helper.from_array(scale, f"{base}_i8_scale"),
        ])
        replace_node(graph, node, [
            helper.make_node("DynamicQuantizeLinear", [a], [f"{out}_aq", f"{out}_as", f"{out}_az"],
                             name=f"{node.name}_i8_a"),
            helper.make_node("MatMulInteger", [f"{out}_aq", f"{base}_i8", f"{out}_az", f"{base}_i8_zero"],
                             [f"{out}_i32"], name=f"{node.name}_i8"),
            helper.make_node("Cast", [f"{out}_i32"], [f"{out}_f"], name=f"{node.name}_i8_cast", to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{out}_as", f"{base}_i8_scale"], [f"{out}_scales"], name=f"{node.name}_i8_s"),
            helper.make_node("Mul", [f"{out}_f", f"{out}_scales"], [out], name=f"{node.name}_i8_mul"),
        ])
        if tick is not None:
            tick((count + 1) / len(nodes), f"int8: {node.name}")
    drop_unused_initializers(graph)
    return model


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


QK_K = 256  # a k-quant super-block


@dataclass
class Blocks:
    """A GGUF matrix [N, K] as w = scales · values + offsets per block along K: values [N, K/B, B] int8 (the
    block's integers with any zero point subtracted), scales [N, K/B] float32, offsets [N, K/B] float32 or None.
    Each type's scales and offsets are computed as gguf-py's dequantize computes them (in float32, in its order),
    so `dequantized` is its result bit for bit."""

    values: np.ndarray
    scales: np.ndarray
    offsets: np.ndarray | None = None

    @property
    def block(self) -> int:
        return self.values.shape[-1]

    @property
    def shape(self) -> tuple[int, int]:
        """[N, K] of the matrix the blocks hold."""
        rows, count, block = self.values.shape
        return rows, count * block

    def dequantized(self) -> np.ndarray:
        w = self.scales[..., None] * self.values.astype(np.float32)
        if self.offsets is not None:
            w = w + self.offsets[..., None]
        return w.reshape(w.shape[0], -1)


def fp16_at(blocks: np.ndarray, start: int) -> np.ndarray:
    """The fp16 stored at byte `start` of each block, as float32 ([..., bytes] → [...])."""
    return blocks[..., start:start + 2].copy().view(np.float16)[..., 0].astype(np.float32)


def q4_1_blocks(raw: np.ndarray, k: int) -> Blocks:
    q, d, m = gguf_q4_1_rows(raw, k)
    return Blocks(q.astype(np.int8), d, m)


def q8_0_blocks(raw: np.ndarray, k: int) -> Blocks:
    q, d = gguf_q8_0_rows(raw, k)
    return Blocks(q, d)


def q5_0_blocks(raw: np.ndarray, k: int) -> Blocks:
    """Q5_0, per 32: d (f16), qh (4 bytes: bit j is element j's fifth bit), 16 bytes of nibbles (element j: byte
    j's low nibble, j + 16: its high); w = d · (q − 16), q in 0..31."""
    n = raw.shape[0]
    blocks = raw.reshape(n, k // BLOCK, 22)
    high = np.unpackbits(blocks[..., 2:6], axis=-1, bitorder="little")  # [N, K/32, 32]: bit j of the uint32
    qs = blocks[..., 6:]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1) | (high << 4)
    return Blocks(q.astype(np.int8) - np.int8(16), fp16_at(blocks, 0))


def q4_k_scale_min(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_K's 12 bytes → eight 6-bit scales and mins ([..., 12] → [..., 8] each): bytes 0-3 hold scales 0-3 (low
    6 bits) and the top 2 bits of scales 4-7, bytes 4-7 the same for the mins, bytes 8-11 the low 4 bits of
    scales 4-7 (low nibble) and mins 4-7 (high nibble)."""
    d, m, low = packed[..., 0:4], packed[..., 4:8], packed[..., 8:12]
    scales = np.concatenate([d & 0x3F, (low & 0x0F) | ((d >> 2) & 0x30)], axis=-1)
    mins = np.concatenate([m & 0x3F, (low >> 4) | ((m >> 2) & 0x30)], axis=-1)
    return scales, mins


def q4_k_blocks(raw: np.ndarray, k: int) -> Blocks:
    """Q4_K, per 256: d, dmin (f16), 12 bytes of 6-bit scales and mins, 128 bytes of nibbles (32 bytes per pair
    of 32-blocks: the low nibbles are block 2i, the high block 2i + 1); w = d·sc_j · q − dmin·m_j, q in 0..15: as
    32-blocks, Q4_1's form with scale d·sc_j and offset −dmin·m_j."""
    n = raw.shape[0]
    supers = raw.reshape(n, k // QK_K, 144)
    sc, mn = q4_k_scale_min(supers[..., 4:16])
    scales = fp16_at(supers, 0)[..., None] * sc.astype(np.float32)  # [N, K/256, 8]
    mins = fp16_at(supers, 2)[..., None] * mn.astype(np.float32)
    qs = supers[..., 16:].reshape(n, k // QK_K, 4, 1, 32) >> np.array([0, 4], np.uint8).reshape(2, 1)
    q = (qs & 0x0F).reshape(n, k // BLOCK, BLOCK)
    return Blocks(q.astype(np.int8), scales.reshape(n, -1), -mins.reshape(n, -1))


def q6_k_blocks(raw: np.ndarray, k: int) -> Blocks:
    """Q6_K, per 256: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 int8 scales, d (f16); per half of
    128, ql's 64 bytes give elements 0-63 (low nibbles) and 64-127 (high), qh's 32 bytes the high bits of elements
    i, i + 32, i + 64, i + 96 (bits 0-1, 2-3, 4-5, 6-7); w = d·sc_i · (q − 32) over 16-blocks, q in 0..63."""
    n = raw.shape[0]
    supers = raw.reshape(n, k // QK_K, 210)
    ql = supers[..., :128].reshape(n, -1, 2, 1, 64) >> np.array([0, 4], np.uint8).reshape(2, 1)
    qh = supers[..., 128:192].reshape(n, -1, 2, 1, 32) >> np.array([0, 2, 4, 6], np.uint8).reshape(4, 1)
    q = ((ql & 0x0F).reshape(n, -1, 8, 32) | ((qh & 0x03).reshape(n, -1, 8, 32) << 4)).astype(np.int8) - np.int8(32)
    scales = fp16_at(supers, 208)[..., None] * supers[..., 192:208].copy().view(np.int8).astype(np.float32)
    return Blocks(q.reshape(n, k // 16, 16), scales.reshape(n, -1))


GGUF_BLOCKS = {"Q4_1": q4_1_blocks, "Q4_K": q4_k_blocks, "Q5_0": q5_0_blocks, "Q6_K": q6_k_blocks,
               "Q8_0": q8_0_blocks}  # GGUF type → its decoder: raw rows [N, bytes], K → Blocks


def pack_nibbles(q: np.ndarray) -> np.ndarray:
    """[N, blocks, 32] values 0..15 → MatMulNBits' 4-bit blob [N, blocks, 16]: element 2i low nibble, 2i + 1 high."""
    return (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)


def matmul_nbits(inputs: list[str], outputs: list[str], name: str, k: int, n: int, bits: int,
                 accuracy_level: int = 0, block_size: int = BLOCK):
    """ONNX Runtime's MatMulNBits node over blocks of BLOCK along K: A [.., K] × the packed weights [K, N].
    accuracy_level 0 keeps the activations fp32 (exact against the dequantized weights); 4 rounds them to int8 per
    block, as llama.cpp's own Q8_0 / Q4 kernels do (faster; near-ties may flip)."""
    from onnx import helper

    return helper.make_node("MatMulNBits", inputs, outputs, name=name, domain=MS_DOMAIN, K=k, N=n, bits=bits,
                            block_size=block_size, accuracy_level=accuracy_level)


def q4_1_nodes(node, base: str, q, d, m, k: int, n: int, sums: str | None,
               accuracy_level: int = 0) -> tuple[list, list, str]:
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
                          bits=4, accuracy_level=accuracy_level)]
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


def quantize_q8_0_fitted(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q8_0 blocks (llama.cpp's format: 32 int8 values and an fp16 scale each, dequantized as d · q) with the scale
    of each block chosen for the least squared error: amax / 127 (quantize_row_q8_0_ref's) or a fraction 1/j of
    the block's own smallest spacing between values, the finest ones that still reach amax. On weights that are
    coarser blocks already (the default model's Q4_1 values: 16 levels a block) such a scale puts every level on
    the int8 grid but for one shared offset, where amax / 127 rounds each weight (a fifth of the squared error,
    measured over SmolLM2's matrices); on weights without such spacing amax / 127 stays. → (q, d) as quantize_q8_0."""
    n, k = weight.shape
    x = weight.astype(np.float32).reshape(n, k // BLOCK, BLOCK)
    q, d = quantize_q8_0(weight)
    best = q8_0_squared_error(x, q, d)
    amax = np.abs(x).max(axis=-1)
    gaps = np.diff(np.sort(x, axis=-1), axis=-1)
    gaps = np.where(gaps > np.float32(1e-4) * amax[..., None], gaps, np.inf).min(axis=-1)
    finest = np.floor(np.float32(127) * gaps / np.maximum(amax, np.float32(1e-30)))  # largest j with amax/(gap/j) ≤ 127
    for back in range(FIT_CANDIDATES):
        j = np.maximum(finest - back, 1)
        scale = np.where(np.isfinite(gaps), gaps / j, d).astype(np.float16).astype(np.float32)
        inverse = np.divide(np.float32(1), scale, out=np.zeros_like(scale), where=scale != 0)
        candidate = np.clip(round_half_away(x * inverse[..., None]), -127, 127).astype(np.int8)
        error = q8_0_squared_error(x, candidate, scale)
        better = error < best
        best = np.where(better, error, best)
        q, d = np.where(better[..., None], candidate, q), np.where(better, scale, d)
    return q, d


def q8_0_squared_error(x: np.ndarray, q: np.ndarray, d: np.ndarray) -> np.ndarray:
    return np.square(x - d[..., None] * q.astype(np.float32)).sum(axis=-1)


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


def folded_nodes(node, base: str, blocks: Blocks, k: int, n: int, tag: str) -> tuple[list, list]:
    """Blocks stored as int8 values and float32 scales (and offsets), dequantized in the graph (Cast · scale
    [+ offset], reshaped and transposed to [K, N]) into the fp32 MatMul: every input is constant, so ONNX Runtime
    folds it into fp32 weights when the session loads, and the step runs at fp32's speed. The float32 products
    and sums are the ones gguf-py's dequantize computes, in its order: the same weights bit for bit."""
    from onnx import TensorProto, helper, numpy_helper

    name, w = node.name, f"{base}_{tag}"
    inits = [
        numpy_helper.from_array(np.ascontiguousarray(blocks.values), w),
        numpy_helper.from_array(np.ascontiguousarray(blocks.scales[..., None]), f"{w}_scales"),
    ]
    nodes = [
        helper.make_node("Cast", [w], [f"{w}_f"], name=f"{name}_{tag}_cast", to=TensorProto.FLOAT),
        helper.make_node("Mul", [f"{w}_f", f"{w}_scales"], [f"{w}_w"], name=f"{name}_{tag}_mul"),
    ]
    if blocks.offsets is not None:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(blocks.offsets[..., None]), f"{w}_offsets"))
        nodes.append(helper.make_node("Add", [f"{w}_w", f"{w}_offsets"], [f"{w}_wo"], name=f"{name}_{tag}_add"))
    inits.append(numpy_helper.from_array(np.array([n, k], np.int64), f"{w}_shape"))
    nodes += [
        helper.make_node("Reshape", [nodes[-1].output[0], f"{w}_shape"], [f"{w}_nk"], name=f"{name}_{tag}_reshape"),
        helper.make_node("Transpose", [f"{w}_nk"], [f"{w}_kn"], name=f"{name}_{tag}_t", perm=[1, 0]),
        helper.make_node("MatMul", [node.input[0], f"{w}_kn"], list(node.output), name=name),
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
    """llama.cpp's `scheme` (q8_0 | q4_0 | q4_1) blocks of every constant-weight MatMul of the graph, run through
    MatMulNBits (weight-only at accuracy_level 0: exact against the dequantized blocks; siblings of one form as one,
    emit_groups), Q8_0 at level 0 folded into fp32 weights at load (fp32's speed, exact). The lm_head (the
    tied embedding) is always Q8_0, as llama.cpp never puts that tensor at 4 bits; it stays an fp32 MatMul of its
    Q8_0 values (ONNX Runtime's 8-bit kernel at level 0 is ~20x slower than fp32 for a 49152-wide head). Q8_0
    scales are fitted per block (quantize_q8_0_fitted).
    Returns (model, report): matrices by kind and the largest |dequantized − original weight|."""
    from onnx import numpy_helper

    if scheme not in BLOCK_SCHEMES:
        raise ValueError(f"unknown block scheme {scheme!r}; allowed {', '.join(BLOCK_SCHEMES)}")
    graph = model.graph
    inits = initializers(graph)
    nodes = weight_matmuls(graph)
    report = {"scheme": scheme, "accuracy_level": accuracy_level, "q8_0": 0, "q4_0": 0, "q4_1": 0,
              "lm_head": "q8_0 values, fp32 MatMul", "max_abs_weight_change": 0.0}
    planned: list[tuple] = []  # (node, kind, blocks), emitted in sibling groups as to_gguf_exact's
    for count, node in enumerate(nodes):
        weight = numpy_helper.to_array(inits[node.input[1]]).astype(np.float32)  # [K, N]
        k, n = weight.shape
        if k % BLOCK:
            raise QuantizeError(f"{node.name}: K = {k} is not a multiple of {BLOCK}")
        base = node.input[1]
        if LOGITS in node.output:
            q, d = quantize_q8_0_fitted(weight.T)
            values = (d[..., None] * q).reshape(n, k)
            inits[base].CopyFrom(numpy_helper.from_array(np.ascontiguousarray(values.T), base))
            report["q8_0"] += 1
        else:
            if scheme == "q8_0":  # level 0: folded into fp32 weights at load (fp32's speed, exact); else MatMulNBits
                q, d = quantize_q8_0_fitted(weight.T)
                blocks, kind = Blocks(q, d), "Q8_0"
            elif scheme == "q4_0":
                q, d = quantize_q4_0(weight.T)
                blocks, kind = Blocks(q.astype(np.int8) - np.int8(8), d), "Q4_0"
            else:
                q, d, m = quantize_q4_1(weight.T)
                blocks, kind = Blocks(q.astype(np.int8), d, m), "Q4_1"
            values = blocks.dequantized()
            planned.append((node, kind, blocks))
            report[scheme] += 1
        report["max_abs_weight_change"] = max(report["max_abs_weight_change"], float(np.max(np.abs(values - weight.T))))
        if tick is not None:
            tick((count + 1) / len(nodes), f"{scheme}: {node.name}")
    emit_groups(graph, planned, True, accuracy_level, report)
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


def gguf_rows(node, name: str, tensor, exported: np.ndarray) -> np.ndarray:
    """The GGUF tensor's raw rows [N, bytes] in the order of the exported matrix's rows [N, K] (row_order)."""
    from gguf.quants import dequantize

    raw = np.asarray(tensor.data)
    dequantized = dequantize(raw, tensor.tensor_type)
    if dequantized.shape != exported.shape or exported.shape[1] % BLOCK:
        raise QuantizeError(f"{name} {tuple(dequantized.shape)} does not fit {node.name}'s weights "
                            f"[N, K] = {list(exported.shape)}")
    return raw[row_order(exported, dequantized, f"{node.name} ← {name}")]


FOUR_BIT = ("Q4_1", "Q4_K")  # 32-blocks of 4-bit values with a scale and an offset each: Q4_1's form


def to_gguf_exact(model, gguf_path: Path, tick: Tick | None = None, four_bit_nbits: bool = True,
                  accuracy_level: int = 0, kinds: tuple[str, ...] | None = None):
    """Every weight MatMul whose GGUF tensor is one of GGUF_BLOCKS' types (or of `kinds`), run from the GGUF's own
    blocks (the `gguf` / `q4_1` / `ggml` variants; see the module docstring). At accuracy level 0 (exact): the
    4-bit types (FOUR_BIT) as MatMulNBits + the block-sum correction (q4_1_nodes: the product to ~1e-6;
    `four_bit_nbits=False`: folded too), the others as constant-folded dequantization (folded_nodes: the fp32
    weights bit for bit), the lm_head the fp32 MatMul, checked against its tensor dequantized. At accuracy level 4
    (`ggml`: computed as llama.cpp's CPU kernels compute, activations rounded to int8 per block) every matrix runs
    through MatMulNBits from its blocks, the lm_head too: the 4-bit types with the block-sum correction, the others
    as 8-bit values (nbits8_nodes). Returns (model, report): matrices by GGUF type, the largest |dequantized − fp32
    weight| by type and overall (0.0 expected), the MatMuls kept in fp32, the accuracy level."""
    from gguf import GGUFReader
    from onnx import numpy_helper

    tensors = {t.name: t for t in GGUFReader(str(gguf_path)).tensors}
    kinds = kinds or tuple(GGUF_BLOCKS)
    graph = model.graph
    inits = initializers(graph)
    nodes = weight_matmuls(graph)
    report: dict = {"by_type": {}, "max_abs_weight_diff_by_type": {}, "kept_fp32": {}, "max_abs_weight_diff": 0.0,
                    "accuracy_level": accuracy_level,
                    "four_bit": "MatMulNBits + block sums" if four_bit_nbits else "folded"}
    planned: list[tuple] = []  # (node, kind, blocks): the matrices run from their blocks, in graph order
    for count, node in enumerate(nodes):
        name = gguf_name_for(node)
        tensor = tensors.get(name) if name else None
        kind = tensor.tensor_type.name if tensor is not None else "none"
        exported = numpy_helper.to_array(inits[node.input[1]]).T  # [N, K]
        head = LOGITS in node.output
        if kind not in kinds or (head and accuracy_level == 0):
            report["kept_fp32"][node.name] = kind
            if head and tensor is not None:
                report["lm_head_max_abs_diff"] = lm_head_diff(tensor, exported)
            continue
        blocks = GGUF_BLOCKS[kind](gguf_rows(node, name, tensor, exported), exported.shape[1])
        diff = float(np.max(np.abs(blocks.dequantized() - exported)))
        planned.append((node, kind, blocks))
        report["by_type"][kind] = report["by_type"].get(kind, 0) + 1
        by_type = report["max_abs_weight_diff_by_type"]
        by_type[kind] = max(by_type.get(kind, 0.0), diff)
        report["max_abs_weight_diff"] = max(report["max_abs_weight_diff"], diff)
        if tick is not None:
            tick((count + 1) / len(nodes), f"gguf: {node.name} ← {name} ({kind})")
    emit_groups(graph, planned, four_bit_nbits, accuracy_level, report)
    if not report["by_type"]:
        raise QuantizeError(f"no MatMul of the graph matched a tensor of {gguf_path.name} of the types "
                            f"{', '.join(kinds)}")
    drop_unused_initializers(graph)
    add_ms_opset(model)
    return model, report


def emit_groups(graph, planned: list[tuple], four_bit_nbits: bool, accuracy_level: int, report: dict) -> None:
    """The planned (node, kind, blocks) replaced in the graph by their nodes, siblings of one form as one
    (sibling_groups); report["merged"] counts the groups of more than one."""
    block_sums: dict[str, str] = {}  # input name -> its block sums
    for form, group in sibling_groups(planned, four_bit_nbits, accuracy_level):
        node, kind, blocks = merged(group) if len(group) > 1 else group[0]
        base, tag, (n, k) = node.input[1], kind.lower(), blocks.shape
        if form == "nbits4":
            new_nodes, new_inits, sums = q4_1_nodes(node, base, blocks.values.astype(np.uint8), blocks.scales,
                                                    blocks.offsets, k, n, block_sums.get(node.input[0]),
                                                    accuracy_level)
            block_sums[node.input[0]] = sums
        elif form == "nbits4_zp8":
            new_nodes, new_inits = q4_0_nodes(node, base, (blocks.values + 8).astype(np.uint8), blocks.scales, k, n,
                                              accuracy_level)
        elif form == "nbits8":
            new_nodes, new_inits = nbits8_nodes(node, base, blocks, k, n, tag, accuracy_level)
        else:
            new_nodes, new_inits = folded_nodes(node, base, blocks, k, n, tag)
        if len(group) > 1:
            new_nodes, new_inits = new_nodes + [split_node(node, group)], new_inits + [split_sizes(node, group)]
            report["merged"] = report.get("merged", 0) + 1
        graph.initializer.extend(new_inits)
        replace_nodes(graph, [member[0] for member in group], new_nodes)


def sibling_groups(planned: list[tuple], four_bit_nbits: bool, accuracy_level: int) -> list[tuple[str, list]]:
    """The planned matrices as (form, group) in graph order: MatMulNBits of one form reading one input (q, k and v;
    gate and up) in one group, run as one wider MatMulNBits and a Split (one kernel launch and one activation
    rounding instead of three: ~1.4 ms of a 17 ms single-row step on the default model); folded ones alone."""
    groups: dict[tuple, list] = {}
    for node, kind, blocks in planned:
        if kind == "Q4_0":  # llama.cpp's Q4_0 quantizer (to_blocks): MatMulNBits' own zero point 8
            form = "nbits4_zp8"
        elif four_bit_nbits and kind in FOUR_BIT:
            form = "nbits4"
        else:
            form = "nbits8" if accuracy_level else "folded"
        key = (node.input[0], form, blocks.block) if form != "folded" else (node.name, form)
        groups.setdefault(key, []).append((node, kind, blocks))
    return [(key[1], group) for key, group in groups.items()]


def merged(group: list[tuple]) -> tuple:
    """A group of sibling matrices as one (node, kind, blocks): their rows stacked (N = the sum), a stand-in
    MatMul node named after the first that writes `<first output>_merged`."""
    from onnx import helper

    first = group[0][0]
    parts = [blocks for _, _, blocks in group]
    offsets = None if parts[0].offsets is None else np.concatenate([b.offsets for b in parts])
    blocks = Blocks(np.concatenate([b.values for b in parts]), np.concatenate([b.scales for b in parts]), offsets)
    kind = "_".join(sorted({kind for _, kind, _ in group}))
    node = helper.make_node("MatMul", [first.input[0], f"{first.input[1]}_merged"], [f"{first.output[0]}_merged"],
                            name=f"{first.name}_merged")
    return node, kind, blocks


def split_sizes(node, group: list[tuple]):
    from onnx import numpy_helper

    sizes = np.array([blocks.shape[0] for _, _, blocks in group], np.int64)
    return numpy_helper.from_array(sizes, f"{node.output[0]}_sizes")


def split_node(node, group: list[tuple]):
    """The merged product split back into the group's own outputs along its last axis."""
    from onnx import helper

    return helper.make_node("Split", [node.output[0], f"{node.output[0]}_sizes"],
                            [member[0].output[0] for member in group], name=f"{node.name}_split", axis=-1)


def nbits8_nodes(node, base: str, blocks: Blocks, k: int, n: int, tag: str, accuracy_level: int) -> tuple[list, list]:
    """Blocks whose values fit int8 (Q8_0, Q5_0, Q6_K) as MatMulNBits with 8 bits, their block size and the default
    zero point 128 on values + 128: scale · value exactly (these types have no offsets)."""
    from onnx import numpy_helper

    if blocks.offsets is not None:
        raise QuantizeError(f"{node.name}: {tag} blocks have offsets; 8-bit MatMulNBits runs scale · value only")
    w = f"{base}_{tag}"
    inits = [numpy_helper.from_array((blocks.values.astype(np.int16) + 128).astype(np.uint8), w),
             numpy_helper.from_array(np.ascontiguousarray(blocks.scales), f"{w}_scales")]
    nodes = [matmul_nbits([node.input[0], w, f"{w}_scales"], list(node.output), f"{node.name}_{tag}", k, n, bits=8,
                          accuracy_level=accuracy_level, block_size=blocks.block)]
    return nodes, inits


def lm_head_diff(tensor, exported: np.ndarray) -> float:
    """|the fp32 lm_head − its GGUF tensor dequantized| at most (the tied embedding: rows in token order)."""
    from gguf.quants import dequantize

    dequantized = dequantize(np.asarray(tensor.data), tensor.tensor_type)
    if dequantized.shape != exported.shape:
        raise QuantizeError(f"{tensor.name} {tuple(dequantized.shape)} does not fit the lm_head {exported.shape}")
    return float(np.max(np.abs(dequantized - exported)))


def replace_node(graph, node, replacements: list) -> None:
    replace_nodes(graph, [node], replacements)


def replace_nodes(graph, old: list, replacements: list) -> None:
    """`old` removed, `replacements` put where the first of them was (siblings read what the first reads)."""
    index = list(graph.node).index(old[0])
    for node in old:
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
