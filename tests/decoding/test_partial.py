"""A served lane's top-N: the raw entropy bounds hold the true entropy of every distribution whose top-N it is (the
tail arranged any way that keeps each unseen token below the least returned one), and are tight at both ends."""

from __future__ import annotations

import doctest

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from decoding.records import partial
from decoding.records.model_info import LaneModelInfo
from decoding.records.trace import LaneTrace, StepRecord, TokenProb


def record_of(top: np.ndarray, recorded: int = 5) -> StepRecord:
    """The step a served lane records when the server returned `top` (true probabilities, best first)."""
    u = 1.0 - top.sum()
    q = top / top.sum()
    entropy = float(-(q * np.log(q)).sum())
    listed = [TokenProb(i, f"t{i}", float(p), i) for i, p in enumerate(q[:recorded])]
    return StepRecord(0, 0, "t0", float(q[0]), float(q[0]), 0.0, 0.0, 0.0, entropy, 0.0, 0.0, len(top), 0.0, 0.0,
                      [], listed, unseen_mass=float(u))


def entropy(p: np.ndarray) -> float:
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


@settings(max_examples=200, deadline=None)
@given(st.integers(4, 60), st.integers(1, 30), st.floats(0.1, 4.0), st.integers(0, 2**32 - 1))
def test_the_bounds_hold_the_true_entropy(vocab, returned, peak, seed):
    returned = min(returned, vocab - 1)
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal(vocab) * peak
    p = np.sort(np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum())[::-1]
    low, high = partial.raw_entropy_bounds(record_of(p[:returned]), returned, vocab)
    assert low - 1e-9 <= entropy(p) <= high + 1e-9


def test_the_bounds_are_reached_by_a_packed_and_an_even_tail():
    top = np.array([0.4, 0.3, 0.1])  # u = 0.2 over 7 unseen tokens, each at most 0.1
    low, high = partial.raw_entropy_bounds(record_of(top, recorded=3), 3, 10)
    assert low == pytest_approx(entropy(np.array([0.4, 0.3, 0.1, 0.1, 0.1])))
    assert high == pytest_approx(entropy(np.array([0.4, 0.3, 0.1, *[0.2 / 7] * 7])))


def pytest_approx(value: float):
    import pytest

    return pytest.approx(value, abs=1e-12)


def test_a_complete_step_is_its_own_entropy_and_a_complete_lane_is_not_marked():
    step = record_of(np.array([0.5, 0.5]))
    assert partial.raw_entropy_bounds(step, 2, 2) == (step.entropy_raw, step.entropy_raw)
    lane = LaneTrace("s", {}, [], steps=[step], model=LaneModelInfo("m", served={"alternatives": 2, "vocab_size": 2}))
    assert partial.partial_note(lane) is None and partial.mean_raw_entropy_bounds(lane) is None


def test_the_marker_says_the_top_n_and_the_largest_tail():
    steps = [record_of(np.array([0.5, 0.3])), record_of(np.array([0.9, 0.092]))]
    lane = LaneTrace("s", {}, [], steps=steps,
                     model=LaneModelInfo("m", served={"alternatives": 2, "vocab_size": 151936}))
    assert partial.partial_note(lane) == "top 2 of 151,936; tail ≤ 20.0%"
    low, high = partial.mean_raw_entropy_bounds(lane)
    assert low < high


def test_doctests():
    assert doctest.testmod(partial, optionflags=doctest.ELLIPSIS).failed == 0
