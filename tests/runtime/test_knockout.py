"""runtime/knockout and runtime/depth on the tiny model: every knock-out row equals transformers' logits under the
4D float mask that hides the same positions from every later query (m[j+1:, j] = -inf on the causal mask), in
batches of any packing and through a chunked plain run; the depth split's components add up to the gap to 1e-4,
and its per-layer shares equal transformers' own residual pieces read by hooks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from decoding.analysis.why import KnockoutCancelled
from models.graph_edits import EDITS, edited_model_dir
from runtime.decoder import OnnxDecoder
from runtime.knockout import Knockout

TOKENS = [1, 57, 120, 33, 201, 88, 15, 300, 42, 7, 99, 250, 64]


@pytest.fixture(scope="module")
def edited_dir(tiny_model_dir: Path, tmp_path_factory) -> Path:
    return edited_model_dir(tiny_model_dir, tmp_path_factory.mktemp("edited"), EDITS)


@pytest.fixture(scope="module")
def decoder(edited_dir: Path) -> OnnxDecoder:
    return OnnxDecoder(edited_dir, "cpu")


@pytest.fixture(scope="module")
def hf_model(tiny_hf_dir: Path):
    from tests.reference import load_hf_model

    return load_hf_model(tiny_hf_dir, tiny_hf_dir)


def hf_knocked_out(model, token_ids: list[int], hidden: list[int]) -> np.ndarray:
    """transformers' last-position logits with `hidden` masked for every later query (a 4D float mask)."""
    import torch

    length = len(token_ids)
    mask = torch.full((length, length), float("-inf")).triu(1)
    for position in hidden:
        mask[position + 1 :, position] = float("-inf")
    with torch.no_grad():
        out = model(torch.tensor([token_ids]), attention_mask=mask[None, None])
    return out.logits[0, -1].double().numpy()


@pytest.mark.parametrize("max_tokens", [1, 20, 1024])
def test_each_row_equals_transformers_under_the_same_mask(decoder, hf_model, max_tokens):
    groups = [[j] for j in range(len(TOKENS) - 1)] + [[2, 3, 4], [0, 9], [5, 11]]
    a, b = 17, 250
    rows = Knockout(decoder, max_tokens=max_tokens, max_rows=4).run(TOKENS, groups, [a, b])
    plain = hf_knocked_out(hf_model, TOKENS, [])
    assert np.allclose(rows.base_logits, plain[[a, b]], atol=1e-4)
    assert rows.base_top_id == int(plain.argmax())
    for r, group in enumerate(groups):
        expected = hf_knocked_out(hf_model, TOKENS, group)
        assert np.allclose(rows.logits[r], expected[[a, b]], atol=1e-4), group
        log_norm = np.log(np.exp(expected - expected.max()).sum()) + expected.max()
        assert rows.log_norm[r] == pytest.approx(log_norm, abs=1e-4)
        assert rows.top_ids[r] == int(expected.argmax())
    moved = np.abs(rows.logits - rows.base_logits).max(axis=1)
    assert moved.min() > 1e-3  # every knock-out changes something on this model: the test can tell rows apart


def test_a_long_context_runs_its_plain_part_in_chunks(decoder, hf_model, monkeypatch):
    import runtime.knockout as knockout

    monkeypatch.setattr(knockout, "PLAIN_CHUNK", 5)
    rows = Knockout(decoder).run(TOKENS, [[1], [10]], [3, 4])
    for r, group in enumerate([[1], [10]]):
        assert np.allclose(rows.logits[r], hf_knocked_out(hf_model, TOKENS, group)[[3, 4]], atol=1e-4)


def test_progress_reports_rows_and_cancel_stops(decoder):
    seen = []
    Knockout(decoder, max_rows=3).run(TOKENS, [[j] for j in range(6)], [1, 2],
                                      progress=lambda done, total: seen.append((done, total)))
    assert seen == [(0, 6), (3, 6), (6, 6)]
    with pytest.raises(KnockoutCancelled, match="after 3 of 6"):
        Knockout(decoder, max_rows=3).run(TOKENS, [[j] for j in range(6)], [1, 2],
                                          progress=lambda done, total: done >= 3)


@pytest.mark.parametrize(
    ("hidden", "candidates", "message"),
    [([[12]], [1, 2], r"hidden\[0\] must name positions in \[0, 12\)"),
     ([[]], [1, 2], r"hidden\[0\]"),
     ([[1]], [1, 10**6], "candidate ids must be in"),
     ],
)
def test_bad_rows_are_refused_by_name(decoder, hidden, candidates, message):
    with pytest.raises(ValueError, match=message):
        Knockout(decoder).run(TOKENS, hidden, candidates)


def test_a_graph_without_the_per_row_mask_is_refused(tiny_model_dir):
    with pytest.raises(ValueError, match="per-row attention mask"):
        Knockout(OnnxDecoder(tiny_model_dir, "cpu"))


@pytest.mark.parametrize("edited", [True, False])
def test_depth_split_adds_up_to_the_gap(edited_dir, tiny_model_dir, edited):
    from runtime.depth import DepthGraph

    split = DepthGraph(edited_dir if edited else tiny_model_dir, "cpu").split(TOKENS, 17, 250)
    parts = split.embedding + sum(split.attention) + sum(split.mlp)
    assert abs(split.gap) > 0.1
    assert parts == pytest.approx(split.gap, abs=1e-4)
    assert abs(split.rest) < 1e-4
    assert split.total() == pytest.approx(split.gap, abs=1e-9)
    for layer in range(split.layers):
        assert sum(split.heads[layer]) == pytest.approx(split.attention[layer], abs=1e-4)
    assert len(split.heads[0]) == 4 and split.layers == 2


def test_depth_split_matches_transformers_residual_pieces(edited_dir, hf_model):
    import torch

    from runtime.depth import DepthGraph

    pieces: dict[str, torch.Tensor] = {}
    hooks = []
    for i, layer in enumerate(hf_model.model.layers):
        hooks.append(layer.self_attn.register_forward_hook(
            lambda _m, _i, out, i=i: pieces.__setitem__(f"attn{i}", out[0][0, -1])))
        hooks.append(layer.mlp.register_forward_hook(
            lambda _m, _i, out, i=i: pieces.__setitem__(f"mlp{i}", out[0, -1])))
    with torch.no_grad():
        out = hf_model(torch.tensor([TOKENS]), output_hidden_states=True)
    for hook in hooks:
        hook.remove()
    a, b = 17, 250
    final = out.hidden_states[0][0, -1]
    for i in range(2):
        final = final + pieces[f"attn{i}"] + pieces[f"mlp{i}"]
    norm = hf_model.model.norm
    rms = torch.sqrt(final.pow(2).mean() + norm.variance_epsilon)
    direction = hf_model.lm_head.weight[a] - hf_model.lm_head.weight[b]
    share = lambda x: float((norm.weight * x / rms) @ direction)  # noqa: E731
    split = DepthGraph(edited_dir, "cpu").split(TOKENS, a, b)
    assert split.embedding == pytest.approx(share(out.hidden_states[0][0, -1]), abs=1e-4)
    for i in range(2):
        assert split.attention[i] == pytest.approx(share(pieces[f"attn{i}"]), abs=1e-4)
        assert split.mlp[i] == pytest.approx(share(pieces[f"mlp{i}"]), abs=1e-4)
    assert split.rms == pytest.approx(float(rms), rel=1e-5)


def test_a_graph_the_depth_split_does_not_read_is_refused_with_the_reason(edited_dir):
    import json

    import onnx

    from runtime.depth import find_plan

    model = onnx.load(str(edited_dir / "model.onnx"), load_external_data=False)
    config = json.loads((edited_dir / "config.json").read_text(encoding="utf-8"))
    find_plan(model.graph, config)
    for node in model.graph.node:
        if node.op_type == "MatMul" and "o_proj" in node.name:
            node.op_type = "MatMulNBits"  # as a 4-bit variant's projections are
    with pytest.raises(ValueError, match="adds no float MatMul projection"):
        find_plan(model.graph, config)
    with pytest.raises(ValueError, match="3 layers"):
        find_plan(onnx.load(str(edited_dir / "model.onnx"), load_external_data=False).graph,
                  {**config, "num_hidden_layers": 3})
