"""decoding.chain.selectors and decoding.records.stats against brute-force numpy references (full sorts, float64)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from decoding.chain.selectors import Sampler, draw_with, greedy
from decoding.records.stats import Softmax, distribution, step_stats
from decoding.records.trace import StepRecord
from tests.fake_source import numpy_summary

SETTINGS = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)


@st.composite
def rows(draw, min_vocab: int = 1) -> np.ndarray:
    """One logits row: LM-like, flat, tied, peaked, or mostly filtered; small and full-size vocabularies."""
    vocab = draw(st.sampled_from([v for v in (1, 2, 7, 40, 3000, 49152) if v >= min_vocab]))
    kind = draw(st.sampled_from(["zipf", "flat", "ties", "peaked", "filtered"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if kind == "zipf":
        row = rng.permutation(10 - 2.0 * np.log(np.arange(1, vocab + 1))) + rng.standard_normal(vocab)
    elif kind == "flat":
        row = np.zeros(vocab)
    elif kind == "ties":
        row = rng.integers(-2, 2, vocab).astype(np.float64)
    elif kind == "peaked":
        row = rng.standard_normal(vocab)
        row[rng.integers(vocab)] = 50.0
    else:
        row = np.where(rng.random(vocab) < 0.7, -np.inf, rng.standard_normal(vocab) * 2)
        row[rng.integers(vocab)] = 1.0
    return row.astype(np.float32)


def reference_order(row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every kept id by descending probability, ties by ascending id (full stable sort), float64 probs."""
    ids = np.flatnonzero(row > -np.inf)
    ids = ids[np.argsort(-row[ids], kind="stable")]
    weights = np.exp(row[ids].astype(np.float64) - row[ids].max())
    return ids, weights / weights.sum()


# ------------------------------------------------------------------------------------------- selectors


def test_greedy_takes_the_lowest_id_among_ties():
    scores = np.array([[0, 3, 1, 3], [-np.inf, -np.inf, 2, 2], [5, 5, 5, 5]], np.float32)
    assert greedy(scores).tolist() == [1, 2, 0]


@SETTINGS
@given(row=rows(), u=st.one_of(st.floats(0, 1, exclude_max=True), st.sampled_from([0.0, 0.5, 1 - 2**-53])))
def test_draw_is_the_inverse_cdf_over_the_descending_order(row, u):
    ids, probs = reference_order(row)
    cumulative = np.cumsum(probs)
    drawn = draw_with(u, row)
    assert drawn.low <= u < drawn.high
    # probabilities come from float32 exp (summed in float64): within 1e-6 of a boundary, either side is right
    assume(np.abs(cumulative - u).min() > 1e-6)
    position = min(int(np.searchsorted(cumulative, u, side="right")), ids.size - 1)
    assert drawn.token_id == ids[position]
    assert drawn.high - drawn.low == pytest.approx(probs[position], abs=1e-7)
    assert drawn.low == pytest.approx(cumulative[position] - probs[position], abs=1e-7)


def test_draw_refuses_a_fully_filtered_row():
    with pytest.raises(ValueError, match="every token is filtered"):
        draw_with(0.3, np.full(5, -np.inf, np.float32))


def test_same_seed_same_draws_and_lanes_are_independent():
    row = np.linspace(0, 3, 100, dtype=np.float32)
    first, second, other = Sampler(7), Sampler(7), Sampler(8)
    draws_a = [first.draw(row) for _ in range(50)]
    for _ in range(10):  # another lane drawing in between changes nothing
        other.draw(row)
    draws_b = [second.draw(row) for _ in range(50)]
    assert draws_a == draws_b
    another = Sampler(8)  # one generator drawing 50 times: its own sequence, not one value repeated
    assert [d.u for d in draws_a] != [another.draw(row).u for _ in range(50)]
    assert len({d.u for d in draws_a}) == 50  # the draws move on


def test_draws_are_identical_in_another_process():
    code = (
        "import numpy as np; from decoding.chain.selectors import Sampler; s = Sampler(1234); "
        "row = np.linspace(-2, 2, 49152, dtype=np.float32); "
        "print([(d.token_id, d.u) for d in (s.draw(row) for _ in range(5))])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    sampler = Sampler(1234)
    row = np.linspace(-2, 2, 49152, dtype=np.float32)
    assert out.strip() == str([(d.token_id, d.u) for d in (sampler.draw(row) for _ in range(5))])


def test_a_clone_draws_a_lanes_future_draws_and_reset_its_first_ones():
    row = np.linspace(0, 1, 20, dtype=np.float32)
    parent = Sampler(3)
    first = parent.draw(row)
    branch = parent.clone()
    assert [parent.draw(row) for _ in range(5)] == [branch.draw(row) for _ in range(5)]
    ahead = [branch.draw(row) for _ in range(3)]  # independent generators: the parent did not move
    assert [parent.draw(row) for _ in range(3)] == ahead
    parent.reset()
    assert parent.draw(row) == first


def test_draw_frequencies_follow_the_probabilities():
    row = np.log(np.array([0.5, 0.3, 0.15, 0.05], np.float32))
    sampler = Sampler(0)
    counts = np.bincount([sampler.draw(row).token_id for _ in range(20000)], minlength=4)
    np.testing.assert_allclose(counts / counts.sum(), [0.5, 0.3, 0.15, 0.05], atol=0.015)


def test_seed_is_validated():
    from decoding.chain.spec import LaneSpec

    with pytest.raises(ValueError, match="invalid seed=-1: allowed an integer >= 0"):
        LaneSpec("sampled", do_sample=True, seed=-1)


# ----------------------------------------------------------------------------------------------- stats


def reference_distribution(row: np.ndarray, chosen: int, top_n: int) -> dict:
    ids, probs = reference_order(row)
    full = np.zeros(row.size)
    full[ids] = probs
    top_probs = probs[:top_n]
    return {
        "prob": full[chosen],
        "entropy": float(-(probs[probs > 0] * np.log(probs[probs > 0])).sum()),
        "margin": top_probs[0] - (top_probs[1] if top_probs.size > 1 else 0.0),
        "kept": ids.size,
        "tail_mass": 1.0 - top_probs.sum(),
        "top_ids": ids[:top_n].tolist(),
        "top_probs": top_probs,
    }


@SETTINGS
@given(row=rows(), data=st.data(), top_n=st.sampled_from([20, 25]))
def test_distribution_matches_brute_force(row, data, top_n):
    chosen = data.draw(st.integers(0, row.size - 1))
    got = distribution(row, chosen, top_n, text=lambda t: f"<{t}>")
    want = reference_distribution(row, chosen, top_n)
    assert got.prob == pytest.approx(want["prob"], rel=1e-5, abs=1e-9)
    assert got.logprob == (pytest.approx(np.log(want["prob"]), abs=1e-5) if want["prob"] > 0 else -np.inf)
    assert got.entropy == pytest.approx(want["entropy"], abs=1e-4)
    assert got.margin == pytest.approx(want["margin"], abs=1e-6)
    assert got.kept == want["kept"]
    assert got.tail_mass == pytest.approx(want["tail_mass"], abs=1e-6)
    assert [t.id for t in got.top] == want["top_ids"]
    assert [t.rank for t in got.top] == list(range(len(want["top_ids"])))
    assert [t.text for t in got.top] == [f"<{t}>" for t in want["top_ids"]]
    np.testing.assert_allclose([t.prob for t in got.top], want["top_probs"], rtol=1e-5, atol=1e-9)


def test_step_stats_fill_a_step_record():
    raw = np.log(np.array([0.6, 0.25, 0.1, 0.05] + [1e-9] * 30, np.float32))
    processed = raw.copy()
    processed[2:] = -np.inf  # e.g. top_k=2
    stats = step_stats(raw, processed, chosen=1, top_n=20)
    record = StepRecord(step=0, token_id=1, token_text="b", **stats.record_fields())
    assert record.kept == 2
    assert record.prob == pytest.approx(0.25 / 0.85, rel=1e-5)
    assert record.prob_raw == pytest.approx(0.25, rel=1e-4)
    assert record.tail_mass == pytest.approx(0.0, abs=1e-7)
    assert record.tail_mass_raw > 0
    assert len(record.top) == 2 and len(record.top_raw) == 20
    assert record.margin == pytest.approx((0.6 - 0.25) / 0.85, rel=1e-5)


def test_a_forced_token_outside_the_kept_set_has_zero_processed_probability():
    raw = np.array([3.0, 2.0, 1.0, 0.0], np.float32)
    processed = np.array([3.0, -np.inf, -np.inf, -np.inf], np.float32)
    stats = step_stats(raw, processed, chosen=2)
    assert stats.prob == 0.0 and stats.logprob == -np.inf and stats.prob_raw > 0


def test_unprocessed_lanes_share_the_raw_summary():
    raw = np.linspace(-3, 3, 1000, dtype=np.float32)
    stats = step_stats(raw, raw, chosen=5)
    assert stats.top is stats.top_raw and stats.entropy == stats.entropy_raw


def test_top_n_is_validated():
    with pytest.raises(ValueError, match="invalid top_n=5: allowed an integer >= 20"):
        step_stats(np.zeros(30, np.float32), np.zeros(30, np.float32), 0, top_n=5)


@pytest.mark.parametrize("spread", [0.5, 3.0])
def test_draws_below_the_best_tokens_are_the_inverse_cdf_too(spread):
    # a flat-ish full-vocabulary row: the best ~1k tokens hold little mass, so most draws land among the rest
    # (value buckets, only the bucket holding u sorted)
    rng = np.random.default_rng(7)
    row = (rng.standard_normal(49152) * spread).astype(np.float32)
    row[rng.integers(0, 49152, 300)] = row.max()  # ties across the vocabulary
    ids, probs = reference_order(row)
    cumulative = np.cumsum(probs)
    for u in np.concatenate([rng.random(60), [1 - 2**-53]]):
        drawn = draw_with(float(u), row)
        assert drawn.low <= u < drawn.high
        if np.abs(cumulative - u).min() > 1e-6:
            position = min(int(np.searchsorted(cumulative, u, side="right")), ids.size - 1)
            assert drawn.token_id == ids[position]
            assert drawn.low == pytest.approx(cumulative[position] - probs[position], abs=1e-7)


@SETTINGS
@given(row=rows(min_vocab=2), data=st.data())
def test_statistics_from_a_row_summary_equal_the_numpy_ones(row, data):
    chosen = data.draw(st.integers(0, row.size - 1))
    summary = numpy_summary(row[None], 20)
    from_summary = Softmax.from_summary(row, summary, 0)
    assert (from_summary.weighted_shift is None) == (not np.isfinite(row).all())  # -inf rows: computed here
    got, want = distribution(row, chosen, 20, softmax=from_summary), distribution(row, chosen, 20)
    assert [t.id for t in got.top] == [t.id for t in want.top]
    np.testing.assert_allclose([t.prob for t in got.top], [t.prob for t in want.top], rtol=1e-5, atol=1e-12)
    assert got.entropy == pytest.approx(want.entropy, abs=1e-5)
    assert got.prob == pytest.approx(want.prob, rel=1e-5, abs=1e-12)
    assert (got.kept, got.margin) == (want.kept, pytest.approx(want.margin, abs=1e-6))
    u = data.draw(st.floats(0.0, 1.0, exclude_max=True))
    got_draw, want_draw = draw_with(u, row, from_summary), draw_with(u, row)
    on_a_boundary = min(abs(want_draw.low - u), abs(want_draw.high - u)) < 1e-5  # totals differ in the last bits
    assert got_draw.token_id == want_draw.token_id or on_a_boundary


@SETTINGS
@given(row=rows(min_vocab=2), data=st.data())
def test_a_masked_softmax_is_the_filtered_rows_distribution(row, data):
    # Softmax.masked derives a row with a few ids banned (min_new_tokens, no_repeat_ngram_size) from the raw
    # row's sums, from a RowSummary or from numpy, without building the filtered row or a new exp
    assume(np.isfinite(row).all())
    count = data.draw(st.integers(1, max(1, row.size // 2 - 1)))
    holes = np.unique(data.draw(st.lists(st.integers(0, row.size - 1), min_size=1, max_size=count)))
    raw = Softmax.of(row) if data.draw(st.booleans()) else Softmax.from_summary(row, numpy_summary(row[None], 20), 0)
    filtered = row.copy()
    filtered[holes] = -np.inf
    got, want = Softmax.masked(raw, holes), Softmax.of(filtered)
    weights = np.exp(row.astype(np.float64) - row.max())
    too_many = holes.size >= row.size - row.size // 2
    if too_many or row[holes].max() >= row.max() or weights[holes].sum() >= weights.sum() / 4:
        assert got is None  # refused: the peak is banned or the difference would lose digits
        return
    assert got.kept == want.kept and np.shares_memory(got.row, row)  # raw's arrays, not copies
    chosen = data.draw(st.sampled_from([int(holes[0]), data.draw(st.integers(0, row.size - 1))]))
    got_dist, want_dist = distribution(filtered, chosen, 20, softmax=got), distribution(filtered, chosen, 20)
    assert [t.id for t in got_dist.top] == [t.id for t in want_dist.top]
    np.testing.assert_allclose([t.prob for t in got_dist.top], [t.prob for t in want_dist.top], rtol=1e-5, atol=1e-12)
    assert got_dist.entropy == pytest.approx(want_dist.entropy, abs=1e-5)
    assert got_dist.logprob == pytest.approx(want_dist.logprob, rel=1e-5, abs=1e-6)  # -inf for a banned id
    np.testing.assert_allclose(got.log_softmax(), want.log_softmax(), rtol=1e-5, atol=1e-5)
    assert not np.isin(got.best(min(got.kept, 64)), holes).any()
    u = data.draw(st.floats(0.0, 1.0, exclude_max=True))
    got_draw, want_draw = draw_with(u, filtered, got), draw_with(u, filtered, want)
    assert got_draw.token_id not in holes
    on_a_boundary = min(abs(want_draw.low - u), abs(want_draw.high - u)) < 1e-5
    assert got_draw.token_id == want_draw.token_id or on_a_boundary


@SETTINGS
@given(row=rows(min_vocab=3), data=st.data())
def test_one_banned_id_is_derived_as_several_are(row, data):
    # Softmax.masked takes one hole (the usual eos ban) in scalars: the same numbers as its float64 array sums
    assume(np.isfinite(row).all())
    raw = Softmax.of(row)
    hole = data.draw(st.integers(0, row.size - 1))
    got = Softmax.masked(raw, np.array([hole]))
    weights = raw.weights[[hole]].astype(np.float64)
    if not row[hole] < row.max() or not float(weights.sum()) < raw.total / 4:
        assert got is None
        return
    assert got.total == raw.total - float(weights.sum())
    assert got.shift_sum == raw.shift_sum - float(np.dot(weights, raw.values[[hole]] - raw.peak))
