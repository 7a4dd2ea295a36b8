"""runtime/in_place_kv + KVCache in place: a prepared graph whose KV cache is written into its buffer (TensorScatter)
gives the logits of the graph as exported (Concat-grown cache) through prefill chunks, forks, reorders, truncated
rows, buffers that grow and old caches continued after newer ones wrote into the shared buffer; and a step really
writes in place (same device buffer, nothing copied). The CPU graph (additive mask) and the one CUDA runs
(boolean mask) alike."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

import runtime.kv_cache as kv_cache
from decoding.chain.spec import LaneSpec
from decoding.engine.engine import Engine
from decoding.records.trace import PromptInfo
from models.graph_edits import EDITS, edited_model_dir
from runtime.decoder import OnnxDecoder
from runtime.in_place_kv import in_place_graph
from runtime.tokenizer import Tokenizer

ATOL = 1e-4  # the fused op sums over the buffer's length instead of the cache's: float32 rounding only


@pytest.fixture(scope="module")
def edited_dir(tiny_model_dir: Path, tmp_path_factory) -> Path:
    return edited_model_dir(tiny_model_dir, tmp_path_factory.mktemp("edited"), EDITS)


@pytest.fixture(scope="module")
def pair(edited_dir: Path) -> tuple[OnnxDecoder, OnnxDecoder]:
    """(as exported, in place) over the same prepared graph."""
    return OnnxDecoder(edited_dir, "cpu", in_place=False), OnnxDecoder(edited_dir, "cpu", chunk=5)


@pytest.fixture(scope="module")
def portable(edited_dir: Path) -> OnnxDecoder:
    """The in-place graph CUDA runs (boolean mask), run on the CPU."""
    import runtime.decoder as decoder_module

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(decoder_module, "in_place_graph", lambda model_dir, cpu: in_place_graph(model_dir, cpu=False))
        return OnnxDecoder(edited_dir, "cpu", chunk=4)


def test_only_the_prepared_pattern_is_made_in_place(tiny_model_dir: Path, edited_dir: Path, pair):
    assert in_place_graph(tiny_model_dir) is None  # a plain export: its attention is not the fused op
    assert not OnnxDecoder(tiny_model_dir, "cpu").io.in_place
    graph = in_place_graph(edited_dir)
    nodes = graph.graph.node
    assert sum(node.op_type == "TensorScatter" for node in nodes) == 4  # two layers' keys and values
    assert not any(node.op_type == "Concat" and node.input[0].startswith("past_key_values.") for node in nodes)
    assert {i.name for i in graph.graph.input} >= {"kv_write_index", "kv_attention_mask"}
    assert "attention_mask" not in {i.name for i in graph.graph.input}  # the export's mask is gone with its nodes
    onnx.checker.check_model(graph)
    exported, in_place = pair
    assert in_place.io.in_place and not exported.io.in_place


@pytest.mark.parametrize("cpu", [True, False])
def test_queries_are_scaled_first_and_the_cpu_graph_takes_an_additive_mask(edited_dir: Path, cpu: bool):
    graph = in_place_graph(edited_dir, cpu=cpu)
    onnx.checker.check_model(graph)
    attention = [node for node in graph.graph.node if node.op_type == "Attention"]
    scales = [attr.f for node in attention for attr in node.attribute if attr.name == "scale"]
    assert scales == [1.0] * len(attention)  # MLAS' one-row kernel; the query carries the scale
    assert all(node.input[0].endswith("_bp_scaled") for node in attention)
    mask = next(i for i in graph.graph.input if i.name == "kv_attention_mask")
    assert mask.type.tensor_type.elem_type == (onnx.TensorProto.FLOAT if cpu else onnx.TensorProto.BOOL)


def test_the_portable_graph_gives_the_cpu_graphs_logits(pair, portable):
    _, in_place = pair
    assert portable.io.in_place and not portable.io.additive_mask and in_place.io.additive_mask
    ids = [(17 * i) % 300 + 3 for i in range(22)]
    (a_state, a), (b_state, b) = in_place.prefill(ids), portable.prefill(ids)
    np.testing.assert_allclose(a, b, atol=ATOL)
    rows, tokens = [0, 0, 0], [int(a.argmax())] * 3  # three forks of the prompt
    for lengths in ([None, 9, 21], None, None, [4, None, None]):
        a_state, a = in_place.step(a_state, rows, tokens, lengths)
        b_state, b = portable.step(b_state, rows, tokens, lengths)
        np.testing.assert_allclose(a, b, atol=ATOL)
        rows, tokens = [2, 0, 1], a.argmax(-1).tolist()  # reordered from here on


def test_a_step_writes_into_the_buffer_it_continues(pair):
    _, decoder = pair
    state, _ = decoder.prefill([5, 6, 7, 8])
    buffers = [value.data_ptr() for value in state.tensors]
    for token in (9, 10, 11):
        state, _ = decoder.step(state, [0], [token])
        assert [value.data_ptr() for value in state.tensors] == buffers
    assert state.capacity == 4 + kv_cache.kv_spare(4) and state.physical_length == 7


def test_a_full_buffer_grows_by_a_square_root_spare(pair):
    """Attention reads the whole buffer: it is made 2·sqrt(what it must hold) longer (at least KV_SPARE_MIN), and
    reallocated only when full."""
    assert [kv_cache.kv_spare(n) for n in (1, 256, 1000, 1024, 4000, 4096)] == [32, 32, 62, 64, 126, 128]
    _, decoder = pair
    state, _ = decoder.prefill([(7 * i) % 300 + 3 for i in range(37)])
    grown = [(state.physical_length, state.capacity)]
    for token in range(40):
        before = state.capacity
        state, _ = decoder.step(state, [0], [token + 3])
        if state.capacity != before:
            grown.append((state.physical_length, state.capacity))
    assert grown == [(37, 37 + 32), (70, 70 + 32)]


def test_forks_reorders_truncations_and_steps_match_the_export(pair):
    exported, in_place = pair
    ids = [(13 * i) % 300 + 3 for i in range(23)]
    (a_state, a), (b_state, b) = exported.prefill(ids), in_place.prefill(ids)  # in chunks of 5
    np.testing.assert_allclose(a, b, atol=ATOL)
    rows, tokens, lengths = [0, 0, 0], [4, 5, 6], [None, 9, 17]
    a_state, a = exported.step(a_state, rows, tokens, lengths)
    b_state, b = in_place.step(b_state, rows, tokens, lengths)
    np.testing.assert_allclose(a, b, atol=ATOL)
    for step in range(10):
        rows = [2, 0, 1] if step % 2 else [0, 1, 2]
        tokens = a.argmax(-1).tolist()
        (a_state, a), (b_state, b) = exported.step(a_state, rows, tokens), in_place.step(b_state, rows, tokens)
        np.testing.assert_allclose(a, b, atol=ATOL)
    np.testing.assert_array_equal(a_state.lengths, b_state.lengths)


def test_an_old_cache_continued_after_a_newer_one_wrote_is_copied_first(pair):
    exported, in_place = pair
    (a_old, _), (b_old, _) = exported.prefill([3, 4, 5, 6]), in_place.prefill([3, 4, 5, 6])
    a_new, _ = exported.step(a_old, [0], [7])
    b_new, _ = in_place.step(b_old, [0], [7])  # wrote position 4 of the shared buffer
    (_, a), (_, b) = exported.step(a_old, [0], [8]), in_place.step(b_old, [0], [8])  # the old one again
    np.testing.assert_allclose(a, b, atol=ATOL)
    (_, a), (_, b) = exported.step(a_new, [0], [9]), in_place.step(b_new, [0], [9])  # the newer one is intact
    np.testing.assert_allclose(a, b, atol=ATOL)


def test_a_full_buffer_grows_and_keeps_every_row(pair, monkeypatch):
    monkeypatch.setattr(kv_cache, "kv_spare", lambda needed: 2)
    exported, in_place = pair
    (a_state, a), (b_state, b) = exported.prefill([3, 4, 5]), in_place.prefill([3, 4, 5])
    capacities = {b_state.capacity}
    a_state, a = exported.step(a_state, [0, 0], [6, 7])
    b_state, b = in_place.step(b_state, [0, 0], [6, 7])
    for _ in range(7):
        tokens = a.argmax(-1).tolist()
        (a_state, a), (b_state, b) = exported.step(a_state, [1, 0], tokens), in_place.step(b_state, [1, 0], tokens)
        np.testing.assert_allclose(a, b, atol=ATOL)
        capacities.add(b_state.capacity)
    assert len(capacities) >= 3 and b_state.capacity >= b_state.physical_length


def test_engine_runs_are_the_same_in_place(edited_dir: Path, pair):
    tokenizer = Tokenizer.from_model_dir(edited_dir)
    lanes = [LaneSpec("greedy"), LaneSpec("sampled", do_sample=True, temperature=0.8, seed=3),
             LaneSpec("beam", num_beams=3), LaneSpec("top-k", do_sample=True, top_k=5, seed=4)]
    text = "Although I was tired, I still decided to go for a walk"
    prompt = PromptInfo(text, tokenizer.encode(text))
    runs = [Engine(decoder, tokenizer, list(decoder.eos_token_ids)).run(prompt, lanes, max_new_tokens=12)
            for decoder in pair]
    for a, b in zip(runs[0].lanes, runs[1].lanes, strict=True):
        assert a.token_ids == b.token_ids, a.spec.name
        assert len(a.token_ids) == 12


def test_default_model_in_place_matches_the_export(default_model_dir: Path):
    exported, in_place = OnnxDecoder(default_model_dir, "cpu", in_place=False), OnnxDecoder(default_model_dir, "cpu")
    assert in_place.io.in_place
    ids = [(37 * i) % 20000 + 100 for i in range(300)]
    (a_state, a), (b_state, b) = exported.prefill(ids), in_place.prefill(ids)
    np.testing.assert_allclose(a, b, atol=ATOL)
    rows, lengths = [0, 0, 0], [None, 200, 290]
    tokens = [int(a.argmax())] * 3
    a_state, a = exported.step(a_state, rows, tokens, lengths)
    b_state, b = in_place.step(b_state, rows, tokens, lengths)
    for _ in range(15):
        np.testing.assert_allclose(a, b, atol=ATOL)
        assert a.argmax(-1).tolist() == b.argmax(-1).tolist()
        tokens = a.argmax(-1).tolist()
        a_state, a = exported.step(a_state, [0, 1, 2], tokens)
        b_state, b = in_place.step(b_state, [0, 1, 2], tokens)
