"""What the Model comparison view draws, Qt-free (gui.present.model_compare_rows over gui.state.model_comparison):
the KL strip's bars and flips, the two distributions of a step, the summary, each against a plain numpy
recomputation of the same logits."""

from __future__ import annotations

import numpy as np
import pytest

from gui.present import model_compare_rows as rows
from gui.state.model_comparison import ModelSide, comparison_of, summary_of, top_tokens

VOCAB = 30
PIECES = [f"t{i}" for i in range(VOCAB)]


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.fixture
def made():
    """Two models' logits over 8 steps; B's rows 2 and 5 have a different top-1 (a flip), the rest the same."""
    rng = np.random.default_rng(7)
    a = rng.normal(0, 2, (8, VOCAB))
    b = a + rng.normal(0, 0.05, a.shape)
    for step in (2, 5):
        b[step, int(np.argsort(a[step])[-2])] = a[step].max() + 3.0  # A's runner-up becomes B's clear top-1
    chosen = [int(np.argmax(row)) for row in a]  # a greedy lane of model A
    sides = (ModelSide("A-model", "fp32"), ModelSide("B-model", "int4"))
    greedy = {"reference_ids": [1, 2, 3], "other_ids": [1, 2, 4], "reference_text": "", "other_text": ""}
    comparison = comparison_of(3, "greedy", sides, (a, b), chosen, PIECES.__getitem__, greedy)
    return a, b, chosen, comparison


def test_strip_bars_mark_exactly_the_flips(made):
    a, b, chosen, comparison = made
    bars = rows.strip_bars(comparison)
    p, q = softmax(a), softmax(b)
    kl = (p * (np.log(p) - np.log(q))).sum(axis=-1)
    assert [bar.step for bar in bars] == list(range(8))
    np.testing.assert_allclose([bar.kl for bar in bars], kl, rtol=1e-9)
    flips = [bar.step for bar in bars if bar.flip]
    assert flips == [2, 5] == [i for i in range(8) if np.argmax(a[i]) != np.argmax(b[i])]
    for step in flips:  # labelled with both top-1 tokens, A's first
        assert bars[step].flip_label == f"t{np.argmax(a[step])}→t{np.argmax(b[step])}"
    assert all(not bar.flip_label for bar in bars if not bar.flip)
    assert [bar.token for bar in bars] == [PIECES[t] for t in chosen]


def test_tick_labels_thin_out_and_flip_labels_need_room(made):
    bars = rows.strip_bars(made[3])
    assert rows.tick_labels(bars, limit=8) == [(bar.step, bar.token) for bar in bars]
    assert [step for step, _ in rows.tick_labels(bars, limit=3)] == [0, 3, 6]  # every 3rd
    def px(text: str) -> float:
        return 7.0 * len(text)

    assert rows.flip_texts(bars, step_px=100, text_px=px) == {2: bars[2].flip_label, 5: bars[5].flip_label}
    assert rows.flip_texts(bars, step_px=10, text_px=px) == {2: bars[2].flip_label, 5: "↯"}  # would run into 2's
    assert rows.flip_texts(bars, step_px=100, text_px=lambda text: 70.0 * len(text)) == {
        2: bars[2].flip_label, 5: "↯"}  # wide (CJK) pieces: the second one would overlap the first


def test_distribution_rows_are_each_models_top_tokens(made):
    a, b, chosen, comparison = made
    for side, logits in ((0, a), (1, b)):
        shown = rows.distribution_rows(comparison, 5, side)
        probs = softmax(logits[5])
        want = np.argsort(-probs)[:10]
        assert [r.token_id for r in shown[:10]] == [int(i) for i in want]
        np.testing.assert_allclose([r.prob for r in shown[:10]], probs[want], rtol=1e-9)
        assert [r.token_id for r in shown if r.chosen] == [chosen[5]]
        other = b if side == 0 else a  # the other model's top-1 is marked where it is not this one's
        assert [r.token_id for r in shown if r.other_top1] == [int(np.argmax(other[5]))]
    assert not any(r.other_top1 for r in rows.distribution_rows(comparison, 0, 0))  # no flip at step 0


def test_a_chosen_token_outside_the_top_is_appended_with_its_probability():
    logits = np.arange(VOCAB, dtype=np.float64)[None, :]
    comparison = comparison_of(0, "x", (ModelSide("A", "fp32"), ModelSide("B", "fp16")), (logits, logits), [0],
                               PIECES.__getitem__, None)
    shown = rows.distribution_rows(comparison, 0, 1)
    assert len(shown) == 11 and shown[-1].chosen and shown[-1].token_id == 0
    assert shown[-1].prob == pytest.approx(softmax(logits)[0, 0], rel=1e-9)


def test_summary_in_words(made):
    a, b, chosen, comparison = made
    summary = comparison.summary
    assert summary["top1_agreement"] == pytest.approx(6 / 8)
    delta = [abs(softmax(b)[i, t] - softmax(a)[i, t]) for i, t in enumerate(chosen)]
    assert summary["mean_abs_delta_p"] == pytest.approx(np.mean(delta), rel=1e-9)
    assert summary["greedy_first_divergence_step"] == 2
    text = rows.summary_text(comparison)
    assert "top-1 agreement 75.0%" in text and "part at step 2" in text
    assert f"max KL {rows.format_kl(summary['max_kl'])} (step {summary['max_kl_step']})" in text
    assert "not computed" in rows.greedy_text(comparison_of(0, "x", (comparison.reference, comparison.other),
                                                            (a, b), chosen, PIECES.__getitem__, None))
    assert "never part (3 tokens)" in rows.summary_text(
        comparison_of(0, "x", (comparison.reference, comparison.other), (a, b), chosen, PIECES.__getitem__,
                      {"reference_ids": [1, 2, 3], "other_ids": [1, 2, 3]}))
    assert rows.heading(comparison, stale=False).startswith("“greedy”: A-model (fp32) → B-model (int4)")
    assert "stale" in rows.heading(comparison, stale=True)
    caption = rows.step_caption(comparison, 2)
    assert caption.startswith("step 2: “t") and "top-1 flips: A “t" in caption
    assert rows.step_caption(comparison, 0).endswith("same top-1")


def test_tokens_text_links_every_step_and_marks_flips(made):
    comparison = made[3]
    text = rows.tokens_html(comparison, selected=4)
    assert [f'href="step:{i}"' in text for i in range(8)] == [True] * 8
    assert text.count("↯") == 2


def test_empty_summary_and_top_tokens():
    assert summary_of([], None)["mean_abs_delta_p"] == 0.0
    tops = top_tokens(np.array([[0.0, 1.0, 2.0]]), str, count=10)
    assert [t.id for t in tops[0]] == [2, 1, 0]


def test_tokens_text_shows_a_character_split_over_tokens_once():
    """年 is three bytes; a byte-level model may write it as two tokens ("\\xe5\\xb9", "\\xb4"): one character
    linked to its first step, flagged when either piece flips."""
    pieces = ["\\xe5\\xb9", "\\xb4", "x", "y"]
    a = np.zeros((3, 4))
    b = a.copy()
    a[:, 0], b[1, 1] = 1.0, 2.0  # step 1 flips
    comparison = comparison_of(0, "x", (ModelSide("A", "fp32"), ModelSide("B", "int4")), (a, b), [0, 1, 2],
                               pieces.__getitem__, None)
    text = rows.tokens_html(comparison, selected=None)
    assert "年" in text and "\\x" not in text
    assert 'href="step:0"' in text and 'href="step:1"' not in text and 'href="step:2"' in text
    assert text.count("↯") == 1
