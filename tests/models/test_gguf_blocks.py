"""The GGUF variants' block decoders and nodes on synthetic GGUFs: each block type (Q4_K, Q5_0, Q6_K, Q8_0, Q4_1)
decodes to gguf-py's dequantize bit for bit, and its rewritten MatMul through ONNX Runtime gives the product of those
dequantized weights (folded: equal to the fp32 graph's output; MatMulNBits + block sums: to 1e-6); the `ggml`
variant's nodes (accuracy level 4: every matrix, lm_head included, through MatMulNBits from its blocks) are exact at
level 0 and within int8 activation rounding at level 4."""

from __future__ import annotations

import numpy as np
import pytest

from models import quantize
from tests.models.graphs import projection_and_logits_model, run, run_outputs, sibling_projections_model

K, N, VOCAB = 512, 64, 96  # K: two k-quant super-blocks of 256
TYPES = ["Q4_K", "Q5_0", "Q6_K", "Q8_0", "Q4_1"]
KEY_BLOCK = {"Q4_K": (256, 144), "Q6_K": (256, 210)}  # gguf-py quantizes neither: (weights, bytes) per super-block


def fp16_bytes(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float16).view(np.uint8).reshape(*values.shape[:-1], -1)


def raw_tensor(kind: str, n: int, k: int, rng) -> np.ndarray:
    """A tensor [n, k] of `kind` as raw blocks: gguf-py's quantizer where it has one, else random block bytes
    with sane fp16 scales (every bit pattern of the integers and 6-bit scales is a valid block)."""
    import gguf

    qtype = getattr(gguf.GGMLQuantizationType, kind)
    if kind not in KEY_BLOCK:
        return gguf.quants.quantize(rng.normal(0, 0.2, (n, k)).astype(np.float32), qtype)
    weights, size = KEY_BLOCK[kind]
    raw = rng.integers(0, 256, (n, k // weights, size), dtype=np.uint8)
    if kind == "Q4_K":  # d, dmin at bytes 0-3
        raw[..., 0:4] = fp16_bytes(rng.uniform(1e-3, 2e-2, (n, k // weights, 2)))
    else:  # d at bytes 208-209
        raw[..., 208:210] = fp16_bytes(rng.uniform(1e-4, 3e-3, (n, k // weights, 1)))
    return raw.reshape(n, -1)


def write_gguf(path, tensors: dict[str, tuple[str, np.ndarray]]) -> None:
    import gguf

    writer = gguf.GGUFWriter(str(path), "gemma3")
    for name, (kind, raw) in tensors.items():
        writer.add_tensor(name, raw, raw_dtype=getattr(gguf.GGMLQuantizationType, kind))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def dequantized(kind: str, raw: np.ndarray) -> np.ndarray:
    import gguf
    from gguf.quants import dequantize

    return dequantize(raw, getattr(gguf.GGMLQuantizationType, kind))


def gguf_and_graph(tmp_path, kind: str, permute: bool = True):
    """A GGUF holding one `kind` projection and a Q8_0 token embedding, and a graph shaped like optimum's export
    (q_proj, then the logits MatMul) whose fp32 weights are those tensors dequantized (q's rows permuted)."""

    rng = np.random.default_rng(TYPES.index(kind))
    raw, embed_raw = raw_tensor(kind, N, K, rng), raw_tensor("Q8_0", VOCAB, N, rng)
    path = tmp_path / f"{kind}.gguf"
    write_gguf(path, {"blk.0.attn_q.weight": (kind, raw), "token_embd.weight": ("Q8_0", embed_raw)})
    order = rng.permutation(N) if permute else np.arange(N)
    wq, embed = dequantized(kind, raw)[order], dequantized("Q8_0", embed_raw)
    return path, projection_and_logits_model(wq, embed), wq, embed


@pytest.mark.parametrize("kind", TYPES)
def test_each_block_type_decodes_to_gguf_pys_dequantization(kind):
    raw = raw_tensor(kind, 8, K, np.random.default_rng(7))
    blocks = quantize.GGUF_BLOCKS[kind](raw, K)
    assert blocks.values.dtype == np.int8 and blocks.block == (16 if kind == "Q6_K" else 32)
    np.testing.assert_array_equal(blocks.dequantized(), dequantized(kind, raw))


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("four_bit_nbits", [True, False])
def test_each_block_type_runs_its_dequantized_product(tmp_path, kind, four_bit_nbits):
    """The rewritten graph through ONNX Runtime = x @ dequantize(...) to 1e-6 of the output's scale: folded blocks
    give the fp32 graph's output bit for bit; the 4-bit MatMulNBits + block sums to 1e-6."""
    path, model, wq, embed = gguf_and_graph(tmp_path, kind)
    x = np.random.default_rng(1).normal(0, 1, (2, 3, K)).astype(np.float32)
    fp32 = run(model, x)
    rewritten, report = quantize.to_gguf_exact(model, path, four_bit_nbits=four_bit_nbits)
    assert report["by_type"] == {kind: 1} and report["max_abs_weight_diff"] == 0.0
    assert report["kept_fp32"] == {"/lm_head/MatMul": "Q8_0"} and report["lm_head_max_abs_diff"] == 0.0
    ops = [n.op_type for n in rewritten.graph.node]
    nbits = four_bit_nbits and kind in quantize.FOUR_BIT
    assert ("MatMulNBits" in ops) == nbits and ("Cast" in ops) != nbits
    out = run(rewritten, x)
    reference = (x.astype(np.float64) @ wq.T.astype(np.float64)) @ embed.T.astype(np.float64)
    scale = np.max(np.abs(reference))
    assert np.max(np.abs(out - reference)) < 1e-5 * scale  # fp32 accumulation over K = 512
    if nbits:
        assert np.max(np.abs(out - fp32)) < 1e-6 * scale
    else:
        np.testing.assert_array_equal(out, fp32)


@pytest.mark.parametrize("kind", TYPES)
def test_at_accuracy_level_4_every_matrix_runs_from_its_blocks(tmp_path, kind):
    """The ggml variant's rewrite: the projection and the lm_head both MatMulNBits (the 4-bit types with the block
    sums, the others 8-bit at their own block size), nothing kept in fp32; the product is the dequantized weights'
    within what rounding the activations to int8 per block costs (1 %), and not bit for bit (it does round)."""
    path, model, wq, embed = gguf_and_graph(tmp_path, kind)
    x = np.random.default_rng(2).normal(0, 1, (2, 3, K)).astype(np.float32)
    rewritten, report = quantize.to_gguf_exact(model, path, accuracy_level=4)
    assert report["by_type"] == ({kind: 1, "Q8_0": 1} if kind != "Q8_0" else {"Q8_0": 2})
    assert report["kept_fp32"] == {} and report["accuracy_level"] == 4
    nbits = [n for n in rewritten.graph.node if n.op_type == "MatMulNBits"]
    assert len(nbits) == 2 and all(a.i == 4 for n in nbits for a in n.attribute if a.name == "accuracy_level")
    reference = (x.astype(np.float64) @ wq.T.astype(np.float64)) @ embed.T.astype(np.float64)
    error = np.max(np.abs(run(rewritten, x) - reference)) / np.max(np.abs(reference))
    assert 1e-6 < error < 1e-2


@pytest.mark.parametrize("kind", ["Q5_0", "Q6_K", "Q8_0"])
def test_8_bit_matmulnbits_nodes_are_exact_at_level_0(tmp_path, kind):
    """nbits8_nodes' packing (values + 128 under the default zero point, the type's own block size) gives the
    dequantized product exactly when the activations stay fp32: the level-4 error above is the rounding's alone."""
    from onnx import numpy_helper

    path, model, wq, embed = gguf_and_graph(tmp_path, kind)
    node = model.graph.node[0]
    blocks = quantize.GGUF_BLOCKS[kind](quantize.gguf_rows(node, "blk.0.attn_q.weight", gguf_tensor(path), wq), K)
    nodes, inits = quantize.nbits8_nodes(node, "wq", blocks, K, N, kind.lower(), accuracy_level=0)
    model.graph.initializer.extend(inits)
    quantize.replace_node(model.graph, node, nodes)
    model.graph.initializer.remove(next(i for i in model.graph.initializer if i.name == "wq"))
    quantize.add_ms_opset(model)
    x = np.random.default_rng(3).normal(0, 1, (2, 3, K)).astype(np.float32)
    reference = (x.astype(np.float64) @ wq.T.astype(np.float64)) @ embed.T.astype(np.float64)
    assert np.max(np.abs(run(model, x) - reference)) < 1e-5 * np.max(np.abs(reference))
    assert numpy_helper.to_array(inits[0]).dtype == np.uint8


def gguf_tensor(path):
    import gguf

    return next(t for t in gguf.GGUFReader(str(path)).tensors if t.name == "blk.0.attn_q.weight")


def test_the_block_sum_correction_carries_q4_ks_mins(tmp_path):
    """Without the correction (the −dmin·m_j offsets and the 8 · scale of MatMulNBits' zero point) the Q4_K product
    is off: the test above checks something."""
    path, model, wq, embed = gguf_and_graph(tmp_path, "Q4_K", permute=False)
    rewritten, _ = quantize.to_gguf_exact(model, path)
    add = next(n for n in rewritten.graph.node if n.op_type == "Add")
    for node in rewritten.graph.node:
        node.input[:] = [add.input[0] if name == add.output[0] else name for name in node.input]
    x = np.ones((1, 1, K), np.float32)
    reference = (x @ wq.T) @ embed.T
    assert np.max(np.abs(run(rewritten, x) - reference)) > 1e-2 * np.max(np.abs(reference))


SIBLINGS = {"q": ("Q4_K", 64), "k": ("Q4_1", 32), "v": ("Q6_K", 32)}  # q and k both Q4_1's form; v 16-blocks


@pytest.mark.parametrize(("level", "nbits", "merged"), [(0, 1, 1), (4, 3, 1)])
def test_sibling_matrices_run_as_one_wider_matmulnbits(tmp_path, level, nbits, merged):
    """q, k and v read one input: those of one form (here Q4_K and Q4_1) become one MatMulNBits over their stacked
    rows and a Split, each output the product of its own dequantized weights; v (Q6_K: 16-blocks; folded at level
    0) and the lm_head (Q8_0 at level 4) stay alone."""
    rng = np.random.default_rng(11)
    raws = {p: (kind, raw_tensor(kind, n, K, rng)) for p, (kind, n) in SIBLINGS.items()}
    embed_raw = raw_tensor("Q8_0", VOCAB, 64, rng)
    path = tmp_path / "siblings.gguf"
    write_gguf(path, {**{f"blk.0.attn_{p}.weight": raw for p, raw in raws.items()},
                      "token_embd.weight": ("Q8_0", embed_raw)})
    weights = {p: dequantized(kind, raw) for p, (kind, raw) in raws.items()}
    model = sibling_projections_model(weights, dequantized("Q8_0", embed_raw))
    x = rng.normal(0, 1, (2, 3, K)).astype(np.float32)
    rewritten, report = quantize.to_gguf_exact(model, path, accuracy_level=level)
    ops = [n.op_type for n in rewritten.graph.node]
    assert report["merged"] == merged and ops.count("MatMulNBits") == nbits and ops.count("Split") == 1
    outputs = run_outputs(rewritten, x)
    for p, w in weights.items():
        reference = x.astype(np.float64) @ w.T.astype(np.float64)
        error = np.max(np.abs(outputs[p] - reference)) / np.max(np.abs(reference))
        assert error < (1e-6 if level == 0 else 1e-2), p


def test_weights_that_are_not_the_ggufs_are_refused(tmp_path):
    from onnx import numpy_helper

    path, model, wq, _ = gguf_and_graph(tmp_path, "Q5_0")
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array((wq.T + 1e-3).astype(np.float32), "wq"))
    with pytest.raises(quantize.QuantizeError, match="not the GGUF's dequantized rows"):
        quantize.to_gguf_exact(model, path)


def test_a_gguf_without_any_of_the_block_types_is_refused(tmp_path):
    path, model, _, _ = gguf_and_graph(tmp_path, "Q8_0")
    model.graph.node[0].name = "/model/layers.0/self_attn/elsewhere/MatMul"  # no GGUF tensor: kept fp32
    with pytest.raises(quantize.QuantizeError, match="no MatMul of the graph matched"):
        quantize.to_gguf_exact(model, path)


@pytest.mark.parametrize(("variant", "refused"), [("q4_1", True), ("gguf", False), ("ggml", False)])
def test_a_gguf_variant_needs_its_blocks_in_the_base_s_gguf(tmp_path, variant, refused):
    """q4_1 of a model whose GGUF has no Q4_1 blocks (gemma-3-270m's Q4_K_M) is refused before any work, pointing
    at the gguf variant; gguf takes it."""
    from models.errors import PrepareError
    from models.sources import sha256_file
    from models.variants import base_gguf

    path, _, _, _ = gguf_and_graph(tmp_path, "Q5_0")
    manifest = {"name": "m", "source": {"kind": "pypi-chunks", "gguf": path.name, "gguf_sha256": sha256_file(path)}}
    if refused:
        with pytest.raises(PrepareError, match=r"Q5_0.gguf has no Q4_1 blocks \(its tensors: 1 Q5_0, 1 Q8_0\); its "
                                               "gguf variant runs the blocks it has"):
            base_gguf(tmp_path, manifest, variant)
    else:
        assert base_gguf(tmp_path, manifest, variant) == path
