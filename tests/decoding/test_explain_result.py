"""decoding.records.explain without a model: the explain result's JSON (byte-identical round trip, the documented
layout, clear errors for files it cannot read), the length limit, and the summaries the CLI prints."""

from __future__ import annotations

import json
import re
import threading
from types import SimpleNamespace

import numpy as np
import pytest

from decoding.records.explain import (
    EXPLAIN_SCHEMA_VERSION,
    MAX_EXPLAIN_TOKENS,
    ExplainFormatError,
    ExplainResult,
    LogitLens,
    build_explain,
    check_length,
    first_top1_row,
    head_mean,
    most_attended,
    whole_lens,
)
from decoding.records.trace import ModelInfo
from runfiles import run_file

LAYERS, HEADS, LENGTH, TOP_K = 3, 2, 5, 4


class Pieces:
    def piece(self, token_id: int) -> str:
        return f"<{token_id}>"

    def token_bytes(self, token_id: int) -> bytes:
        return bytes([token_id % 256, 0xE8])


def causal_softmax(rng) -> np.ndarray:
    scores = rng.normal(size=(LAYERS, HEADS, LENGTH, LENGTH))
    scores[..., np.triu_indices(LENGTH, 1)[0], np.triu_indices(LENGTH, 1)[1]] = -np.inf
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (weights / weights.sum(axis=-1, keepdims=True)).astype(np.float32)


def arrays(seed: int = 0) -> SimpleNamespace:
    rng = np.random.default_rng(seed)
    probs = -np.sort(-rng.dirichlet(np.ones(50), size=(LAYERS + 1, LENGTH))[..., :TOP_K], axis=-1)
    ids = rng.choice(1000, size=(LAYERS + 1, LENGTH, TOP_K))
    return SimpleNamespace(attentions=causal_softmax(rng), lens_ids=ids, lens_probs=probs.astype(np.float32))


MODEL = ModelInfo("tiny", {"model.onnx": "ab" * 32, "inspection/model.onnx": "cd" * 32}, "/models/tiny")


def result(seed: int = 0) -> ExplainResult:
    made = arrays(seed)
    lens = whole_lens(made.lens_ids, made.lens_probs, Pieces())
    return build_explain([5, 6, 300, 7, 8], 3, made.attentions, lens, Pieces(), MODEL, "CPUExecutionProvider")


class CountingTop:
    """A lens of hidden states [..., D] through a random [D, 1000] head (softmax, top TOP_K), counting the
    rows of each call."""

    def __init__(self, rng) -> None:
        self.head = rng.normal(size=(8, 1000))
        self.calls: list[int] = []

    def __call__(self, hidden: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.calls.append(hidden.shape[1])
        logits = hidden @ self.head
        probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        ids = np.argsort(-probs, axis=-1, kind="stable")[..., :TOP_K]
        return ids, np.take_along_axis(probs, ids, -1).astype(np.float32)


def test_json_round_trip_is_byte_identical_and_keeps_the_arrays():
    original = result()
    text = original.to_json()
    again = ExplainResult.from_json(text)
    assert again.to_json() == text
    assert np.abs(again.attention - original.attention).max() <= 1e-7
    assert np.abs(again.lens_probs - original.lens_probs).max() <= 1e-7
    assert np.array_equal(again.lens_ids, original.lens_ids)
    assert (again.model, again.provider, again.prompt_length, again.tokens) == (
        original.model,
        original.provider,
        original.prompt_length,
        original.tokens,
    )


def test_json_layout_is_the_documented_one():
    data = json.loads(result().to_json())
    assert list(data) == ["schema_version", "model", "provider", "prompt_length", "tokens", "attention", "logit_lens"]
    assert data["schema_version"] == EXPLAIN_SCHEMA_VERSION
    assert data["tokens"][2] == {"id": 300, "text": "<300>", "bytes": [44, 0xE8]}
    attention = data["attention"]
    assert (attention["layers"], attention["heads"]) == (LAYERS, HEADS)
    weights = np.array(attention["weights"])
    assert weights.shape == (LAYERS, HEADS, LENGTH, LENGTH)
    assert np.all(weights[..., np.triu_indices(LENGTH, 1)[0], np.triu_indices(LENGTH, 1)[1]] == 0)
    assert np.allclose(weights.sum(axis=-1), 1, atol=1e-6)
    lens = data["logit_lens"]
    assert (len(lens), len(lens[0]), len(lens[0][0])) == (LAYERS + 1, LENGTH, TOP_K)
    entry = lens[LAYERS][LENGTH - 1][0]
    assert list(entry) == ["id", "text", "prob"] and entry["text"] == f"<{entry['id']}>"
    probs = [e["prob"] for e in lens[1][2]]
    assert probs == sorted(probs, reverse=True)


def test_a_model_with_sliding_windows_keeps_them_per_layer_and_one_without_writes_none():
    """Gemma 3's local layers see the last 512 positions (ExplainResult.windows, from config.json's layer_types)."""
    from dataclasses import replace

    windowed = replace(result(), windows=[512, 512, None])
    data = json.loads(windowed.to_json())
    assert data["windows"] == [512, 512, None] and "windows" not in json.loads(result().to_json())
    again = ExplainResult.from_json(windowed.to_json())
    assert again.windows == [512, 512, None] and again.to_json() == windowed.to_json()
    assert ExplainResult.from_json(result().to_json()).windows is None


def test_lens_top_lists_best_first_with_text():
    res = result()
    top = res.lens_top(LAYERS, 1)
    assert [e.id for e in top] == res.lens_ids[LAYERS, 1].tolist()
    assert top[0].prob >= top[-1].prob and top[0].text == f"<{top[0].id}>"


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.update(schema_version=2), "explain result has schema_version 2; this Branchpoint reads version 1"),
        (lambda d: d.pop("schema_version"), "not an explain result (no schema_version)"),
        (lambda d: d["attention"].update(layers=4), "attention says 4 layers x 2 heads, its weights are [3, 2, 5, 5]"),
        (lambda d: d["tokens"].pop(), "attention weights are [3, 2, 5, 5], expected [L, H, 4, 4]"),
        (lambda d: d["logit_lens"].pop(), "the logit lens is [3, 5, 4], expected [4, 5, K]"),
        (lambda d: d.update(prompt_length=9), "prompt_length 9 is outside [0, 5]"),
        (lambda d: d["attention"]["weights"][0][0].pop(), "not a valid explain result: ValueError"),
        (lambda d: d.pop("logit_lens"), "not a valid explain result: KeyError: 'logit_lens'"),
        (lambda d: d.update(windows=[512, None]), "windows must give each of the 3 layers a window of at least 1"),
        (lambda d: d.update(windows=[512, 0, None]), "windows must give each of the 3 layers a window of at least 1"),
    ],
)
def test_files_it_cannot_read_are_refused_with_the_reason(edit, message):
    data = json.loads(result().to_json())
    edit(data)
    with pytest.raises(ExplainFormatError, match="^" + re.escape(message)):
        ExplainResult.from_json(json.dumps(data))


def test_save_and_load(tmp_path):
    original = result()
    path = run_file.save_explain(original, tmp_path / "explain.json")
    assert run_file.load_explain(path).to_json() == original.to_json()
    with pytest.raises(ExplainFormatError, match="cannot read"):
        run_file.load_explain(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(ExplainFormatError, match="not JSON"):
        run_file.load_explain(tmp_path / "bad.json")


def test_length_limit():
    check_length(1, 8192)
    check_length(MAX_EXPLAIN_TOKENS, None)
    with pytest.raises(ValueError, match="the sequence has 0 tokens; explain takes 1 to 256"):
        check_length(0, 8192)
    with pytest.raises(ValueError, match=r"has 257 tokens; explain takes 1 to 256 \(attention weights grow"):
        check_length(257, 8192)
    with pytest.raises(ValueError, match=r"has 200 tokens; explain takes 1 to 128 \(the model's positions\)"):
        check_length(200, 128)


def test_attention_summaries():
    res = result()
    row = head_mean(res, 1, 3)
    assert row.shape == (4,) and np.isclose(row.sum(), 1, atol=1e-6)
    assert np.allclose(row, res.attention[1, :, 3, :4].mean(axis=0))
    best = most_attended(res, 4, count=5)
    mean = res.attention[:, :, 4, :].mean(axis=(0, 1))
    assert [p for p, _ in best] == np.argsort(-mean, kind="stable").tolist()
    assert np.isclose(best[0][1], mean.max())


def test_first_top1_row_is_where_the_final_choice_first_leads():
    res = result()
    res.lens_ids[:, 0, 0] = [9, 7, 9, 7]
    assert first_top1_row(res, 0) == 1
    res.lens_ids[:, 0, 0] = [7, 7, 7, 7]
    assert first_top1_row(res, 0) == 0
    res.lens_ids[:, 0, 0] = [1, 2, 3, 4]
    assert first_top1_row(res, 0) == LAYERS


def test_a_lens_of_hidden_states_computes_each_position_once_where_read():
    rng = np.random.default_rng(1)
    hidden, top = rng.normal(size=(LAYERS + 1, LENGTH, 8)), CountingTop(rng)
    lazy = build_explain([5, 6, 300, 7, 8], 3, causal_softmax(rng), LogitLens.of_hidden(hidden, top, Pieces().piece,
                         TOP_K), Pieces(), MODEL, "CPUExecutionProvider")
    expected_ids, expected_probs = top(hidden)
    top.calls.clear()
    assert [e.id for e in lazy.lens_top(LAYERS, 2)] == expected_ids[LAYERS, 2].tolist()
    assert lazy.lens_top(0, 2)[0].text == f"<{expected_ids[0, 2, 0]}>"
    assert first_top1_row(lazy, 2) >= 0 and top.calls == [1]  # one position, once
    assert np.array_equal(lazy.lens_ids, expected_ids) and np.array_equal(lazy.lens_probs, expected_probs)
    assert top.calls == [1, LENGTH - 1]  # the rest in one call (up to ROWS_PER_CALL rows), then never again
    whole = build_explain([5, 6, 300, 7, 8], 3, lazy.attention, whole_lens(expected_ids, expected_probs, Pieces()),
                          Pieces(), MODEL, "CPUExecutionProvider")
    assert lazy.to_json() == whole.to_json() and top.calls == [1, LENGTH - 1]


def test_a_whole_lens_is_computed_in_calls_of_at_most_rows_per_call(monkeypatch):
    rng = np.random.default_rng(2)
    top = CountingTop(rng)
    monkeypatch.setattr(LogitLens, "ROWS_PER_CALL", 2 * (LAYERS + 1))  # two positions a call
    lens = LogitLens.of_hidden(rng.normal(size=(LAYERS + 1, LENGTH, 8)), top, Pieces().piece, TOP_K)
    lens.arrays()
    assert top.calls == [2, 2, 1]


def test_threads_reading_one_lens_compute_each_position_once():
    """The window and the autosave thread may read the same lens at once."""
    rng = np.random.default_rng(3)
    hidden, top = rng.normal(size=(LAYERS + 1, LENGTH, 8)), CountingTop(rng)
    expected = top(hidden)
    top.calls.clear()
    lens = LogitLens.of_hidden(hidden, top, Pieces().piece, TOP_K)
    readers = [threading.Thread(target=lens.arrays) for _ in range(3)]
    readers += [threading.Thread(target=lens.column, args=(p,)) for p in range(LENGTH)]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    assert sum(top.calls) == LENGTH
    assert np.array_equal(lens.arrays()[0], expected[0]) and np.array_equal(lens.arrays()[1], expected[1])
