"""Varentropy (the variance of the surprisal) per step, raw and processed, exact over the whole vocabulary: every
way a Softmax is made (from logits, a row summary, a masked or sparse row) against a float64 reference, and each
record of a run against its rows' reference."""

from __future__ import annotations

import numpy as np
import pytest

from decoding.chain.chain import build_processors
from decoding.chain.processors import apply_processors
from decoding.chain.spec import LaneSpec
from decoding.engine.engine import Engine
from decoding.records.stats import Softmax
from decoding.records.trace import PromptInfo
from tests.fake_source import FakeSource, FakeTokenizer, SummarizingSource, numpy_summary


def reference(scores: np.ndarray) -> tuple[float, float]:
    """(entropy, varentropy) in float64 over every finite score."""
    x = scores.astype(np.float64)
    x = x[np.isfinite(x)]
    logp = x - x.max() - np.log(np.exp(x - x.max()).sum())
    p = np.exp(logp)
    entropy = -(p * logp).sum()
    return entropy, float((p * (logp + entropy) ** 2).sum())


def rows(seed: int, vocab: int = 5000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = 11.0 - 2.0 * np.log(np.arange(1, vocab + 1))
    return rng.permutation(base + rng.standard_normal(vocab)).astype(np.float32)


@pytest.mark.parametrize("seed", range(4))
def test_every_kind_of_softmax_has_the_exact_varentropy(seed):
    row = rows(seed)
    expected = reference(row)[1]
    assert Softmax.of(row).varentropy() == pytest.approx(expected, rel=1e-5, abs=1e-7)
    assert Softmax.from_summary(row, numpy_summary(row[None], 20), 0).varentropy() == pytest.approx(
        expected, rel=1e-5, abs=1e-7)
    holes = np.sort(np.random.default_rng(seed).choice(row.size, 40, replace=False))
    filtered = row.copy()
    filtered[holes] = -np.inf
    masked = Softmax.masked(Softmax.of(row), holes)
    if masked is not None:  # raw's arrays with the holes' terms taken off
        assert masked.varentropy() == pytest.approx(reference(filtered)[1], rel=1e-5, abs=1e-7)
    sparse = row.copy()
    sparse[np.argsort(sparse)[:-30]] = -np.inf  # a top-30 row: its kept values only
    assert Softmax.of(sparse).varentropy() == pytest.approx(reference(sparse)[1], rel=1e-5, abs=1e-7)


def test_a_one_hot_or_uniform_distribution_has_no_varentropy():
    assert Softmax.of(np.array([0.0, -np.inf, -np.inf], np.float32)).varentropy() == 0.0
    assert Softmax.of(np.zeros(7, np.float32)).varentropy() == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("source_class", [FakeSource, SummarizingSource])
def test_each_record_holds_its_rows_varentropy(source_class):
    source = source_class(vocab_size=3000)
    lanes = [LaneSpec("greedy"), LaneSpec("top-k", do_sample=True, top_k=40, temperature=0.8, seed=1),
             LaneSpec("banned", no_repeat_ngram_size=2, suppress_tokens=(5,))]
    prompt = PromptInfo("p", [1, 2, 3])
    trace = Engine(source, FakeTokenizer(), eos_token_ids=[]).run(prompt, lanes, max_new_tokens=6)
    for spec, lane in zip(lanes, trace.lanes, strict=True):
        chain = build_processors(spec.to_config(), 3, [])
        for step, record in enumerate(lane.steps):
            history = [1, 2, 3, *lane.token_ids[:step]]
            raw = FakeSource(vocab_size=3000).logits_for(history)
            processed = apply_processors(chain, np.array([history]), raw[None])[0]
            assert record.varentropy_raw == pytest.approx(reference(raw)[1], rel=1e-5, abs=1e-7)
            assert record.varentropy == pytest.approx(reference(processed)[1], rel=1e-5, abs=1e-7)


class Regimes(FakeSource):
    """Steps cycle through a sure distribution, a wide one with a heavy top token (H > 5, V > 5), and the fake
    source's own."""

    def logits_for(self, history):
        row = super().logits_for(history)
        regime = len(history) % 3
        if regime == 0:
            row = np.full(self.vocab_size, -30.0, np.float32)
            row[history[-1] % self.vocab_size] = 10.0
        elif regime == 1:
            row = (np.log(0.7 / (self.vocab_size - 1)) - 1e-4 * np.arange(self.vocab_size)).astype(np.float32)
            row[7] = np.log(0.3)  # no ties: top_k keeps exactly k
        return row


def test_an_adaptive_lane_decides_each_step_by_the_documented_thresholds():
    from decoding.chain.adaptive import decision

    spec = LaneSpec("adaptive", do_sample=True, adaptive=True, temperature=0.8, top_p=0.95, seed=8)
    lane = Engine(Regimes(vocab_size=3000), FakeTokenizer(), eos_token_ids=[]).run(
        PromptInfo("p", [1, 2, 3]), [spec], max_new_tokens=9).lanes[0]
    decisions = [r.adaptive for r in lane.steps]
    assert decisions == ["argmax", "widen", "sample"] * 3
    for record in lane.steps:
        assert record.adaptive == decision(record.entropy_raw, record.varentropy_raw)
        names = [stage.name for stage in record.stages]
        if record.adaptive == "argmax":
            assert record.draw is None and record.token_id == record.top[0].id
        elif record.adaptive == "widen":  # temperature x 1.5, then top_k 100 in transformers' order
            assert record.draw is not None and names == ["temperature", "top_k", "top_p"]
            assert record.stages[1].kept == 100
        else:
            assert record.draw is not None and names == ["temperature", "top_p"]


def test_adaptive_and_mirostat_are_refused_together():
    with pytest.raises(ValueError, match="invalid adaptive=True: allowed false with mirostat=2"):
        LaneSpec("x", do_sample=True, adaptive=True, mirostat=2)
