"""llama.cpp's own sampler tests (tests/test-sampling.cpp), ported: the same candidates, the same parameters,
the same expected probabilities (facts: llama.cpp's test asserts each within 1e-5), run on Branchpoint's
processors. Each case builds logits = log(p) as llama.cpp's `sampler_tester` does, applies the processor, and
compares the probabilities of the candidates left (renormalised, as llama.cpp's `dist` sampler does after the
sampler under test; XTC's and typical's cases read the probabilities without renormalising, as theirs do),
listed in llama.cpp's order of the array: ascending id, or descending probability where its sampler sorts.

Branchpoint's transformers-named processors stand in for llama.cpp's samplers of the same name where the cases
cover them (top_k, top_p, min_p, typical_p, temperature, repetition_penalty); min_p=1.05 is outside Branchpoint's
range ([0, 1], as transformers) and is left out.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from decoding.chain import llama_samplers as L
from decoding.chain import processors as P
from decoding.chain.chain import build_processors

TOL = 1e-5


def logits_of(probs: list[float]) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(np.array([probs], dtype=np.float32))


def kept_probs(out: np.ndarray, renormalise: bool = True, order: str = "id") -> list[float]:
    """The probabilities of the candidates left: softmax over them (llama.cpp's dist) or exp(logit) as given."""
    row = out[0]
    kept = np.flatnonzero(row > -np.inf)
    if order == "desc":
        kept = kept[np.argsort(-row[kept], kind="stable")]
    values = np.exp(row[kept].astype(np.float64))
    return (values / values.sum()).tolist() if renormalise else values.tolist()


def check(got: list[float], expected: list[float]) -> None:
    assert len(got) == len(expected), (got, expected)
    assert np.all(np.abs(np.array(got) - np.array(expected)) < TOL), (got, expected)


def apply(processor: P.Processor, probs: list[float], history: list[int] | None = None) -> np.ndarray:
    ids = np.array([history or [0]], dtype=np.int64)
    return processor(ids, logits_of(probs))


FOUR = [0.1, 0.2, 0.3, 0.4]


# ------------------------------------------------------------------------------------------- temperature


def powered(probs: list[float], exponent: float) -> list[float]:
    """A temperature T on logits log(p) gives p^(1/T) renormalised: the expected values, written out."""
    raised = [p**exponent for p in probs]
    return [r / sum(raised) for r in raised]


def test_temp():
    check(kept_probs(apply(P.Temperature(1.0), FOUR)), FOUR)  # llama.cpp's case: the identity
    check(kept_probs(apply(P.Temperature(0.5), FOUR)), [0.01 / 0.3, 0.04 / 0.3, 0.09 / 0.3, 0.16 / 0.3])
    check(kept_probs(apply(P.Temperature(2.0), FOUR)), powered(FOUR, 0.5))


def test_temp_ext():
    # delta 0 is plain temperature; Branchpoint builds no dynamic temperature then (dynatemp_range off)
    check(kept_probs(apply(P.Temperature(1.0), FOUR)), FOUR)
    # llama.cpp's temperature 0 (greedy) is outside Branchpoint's temperature range; its dynamic temperature
    # reaches T <= 0 only with temperature <= dynatemp_range: the best candidate alone is left
    check(kept_probs(apply(L.DynamicTemperature(0.5, 0.5, exponent=1e6), [0.97, 0.01, 0.01, 0.01])), [1.0])


@pytest.mark.parametrize("probs, exponent", [([0.97, 0.01, 0.01, 0.01], 1.0), (FOUR, 1.0), (FOUR, 2.0),
                                             ([0.5, 0.25, 0.125, 0.125], 0.5)])
def test_temp_ext_on_a_peaked_row_follows_the_entropy(probs, exponent):
    """T = (t - r) + 2r * (H / ln N)^exponent (llama.cpp's temp_ext, min_temp + (max_temp - min_temp) * ...),
    H the entropy of the row in nats, computed here with the math module."""
    t, r = 1.0, 0.5
    entropy = -sum(p * math.log(p) for p in probs)
    temperature = (t - r) + 2 * r * (entropy / math.log(len(probs))) ** exponent
    got = kept_probs(apply(L.DynamicTemperature(t, r, exponent=exponent), probs))
    check(got, powered(probs, 1.0 / temperature))
    assert temperature < t + r  # a peaked row is cooled below the range's top


# ------------------------------------------------------------------------------------------- truncations


@pytest.mark.parametrize("k, expected", [(1, [1.0]), (3, [0.44444, 0.33333, 0.22222]), (4, [0.4, 0.3, 0.2, 0.1])])
def test_top_k(k, expected):
    check(kept_probs(apply(P.TopK(k), FOUR), order="desc"), expected)


@pytest.mark.parametrize("p, expected", [(0.0, [1.0]), (0.7, [0.571429, 0.428571]),
                                         (0.8, [0.44444, 0.33333, 0.22222])])
def test_top_p(p, expected):
    check(kept_probs(apply(P.TopP(p), FOUR), order="desc"), expected)


def test_top_p_one_and_top_k_zero_are_off():
    """llama.cpp's top_p 1.0 and top_k 0 keep everything: Branchpoint's off values, which build nothing."""
    assert build_processors({"do_sample": True, "top_p": 1.0, "top_k": 0}, 1, []) == []


@pytest.mark.parametrize("p, expected", [
    (0.00, [0.1, 0.2, 0.3, 0.4]), (0.24, [0.1, 0.2, 0.3, 0.4]), (0.26, [0.2 / 0.9, 0.3 / 0.9, 0.4 / 0.9]),
    (0.49, [0.2 / 0.9, 0.3 / 0.9, 0.4 / 0.9]), (0.51, [0.3 / 0.7, 0.4 / 0.7]), (0.74, [0.3 / 0.7, 0.4 / 0.7]),
    (0.76, [1.0]), (1.00, [1.0]),
])
def test_min_p(p, expected):
    check(kept_probs(apply(P.MinP(p), FOUR)), expected)


@pytest.mark.parametrize("t, expected", [(0.09, [0.1]), (0.19, [0.2, 0.1]), (0.29, [0.3, 0.2, 0.1]),
                                         (0.39, [0.4, 0.3, 0.2, 0.1])])
def test_xtc(t, expected):
    xtc = L.Xtc(0.99, t, coin=lambda: 0.5)  # llama.cpp's seed-0 coin is below 0.99 in every case
    check(kept_probs(apply(xtc, [0.4, 0.3, 0.2, 0.1]), renormalise=False), expected)


def test_xtc_at_threshold_zero_keeps_the_least_likely_candidate_not_a_filtered_token():
    """Every candidate is at least 0: llama.cpp's array holds candidates only, so its least likely one stays. A
    filtered token (-inf, probability 0) is no candidate (the fuzz found a lane whose every score XTC then cut)."""
    scores = np.log(np.array([[0.5, 0.3, 0.2, 1.0, 1.0]], dtype=np.float32))
    scores[0, 3:] = -np.inf
    out = L.Xtc(1.0, 0.0, coin=lambda: 0.5)(np.array([[0]]), scores)
    assert np.flatnonzero(out[0] > -np.inf).tolist() == [2]


@pytest.mark.parametrize("probs, expected", [([0.97, 0.01, 0.01, 0.01], [0.97]),
                                             ([0.4, 0.2, 0.2, 0.2], [0.2, 0.2, 0.2])])
def test_typical(probs, expected):
    check(kept_probs(apply(P.Typical(0.5), probs), renormalise=False), expected)


@pytest.mark.parametrize("n, expected", [(1.0, [0.428571, 0.571429]), (3.0, [0.1, 0.2, 0.3, 0.4])])
def test_top_n_sigma(n, expected):
    check(kept_probs(apply(L.TopNSigma(n), FOUR)), expected)


def test_top_n_sigma_zero_is_off():
    """llama.cpp: top_n_sigma == 0 is a no-op (since its PR 13345): Branchpoint's off value, which builds nothing."""
    assert build_processors({"do_sample": True, "top_n_sigma": 0.0}, 1, []) == []


# --------------------------------------------------------------------------------------------- penalties

FIVE = [0.2, 0.2, 0.2, 0.2, 0.2]


@pytest.mark.parametrize("history, repeat, frequency, presence, expected", [
    ([0], 50.0, 0.0, 0.0, [0, 0.25, 0.25, 0.25, 0.25]),
    ([0, 1, 2], 50.0, 0.0, 0.0, [0, 0, 0, 0.5, 0.5]),
    ([0, 1, 2, 0, 0], 50.0, 0.0, 0.0, [0, 0, 0, 0.5, 0.5]),
    ([0], 1.0, 5.0, 5.0, [0.000011, 0.249997, 0.249997, 0.249997, 0.249997]),
    ([0, 1, 2], 1.0, 5.0, 5.0, [0.000023, 0.000023, 0.000023, 0.499966, 0.499966]),
    ([0, 1, 2, 0, 0], 1.0, 5.0, 5.0, [0.000000, 0.000023, 0.000023, 0.499977, 0.499977]),
])
def test_penalties(history, repeat, frequency, presence, expected):
    """llama.cpp's penalties sampler (window = the accepted tokens): repetition_penalty, then the frequency
    and presence penalties, over the last penalty_last_n = len(history) ids."""
    config = {"repetition_penalty": repeat, "frequency_penalty": frequency, "presence_penalty": presence,
              "penalty_last_n": len(history)}
    out = P.apply_processors(build_processors(config, 0, []), np.array([history]), logits_of(FIVE))
    check(kept_probs(out), expected)


def test_the_penalty_window_is_the_last_ids():
    """Ids before the window are not penalised (llama.cpp's ring buffer of penalty_last_n tokens)."""
    out = L.FrequencyPresencePenalty(1.0, 0.0, last_n=2)(np.array([[0, 0, 1, 2]]), np.zeros((1, 4), np.float32))
    assert out.tolist() == [[0.0, -1.0, -1.0, 0.0]]
    windowed = P.RepetitionPenalty(2.0, last_n=1)(np.array([[0, 1]]), np.ones((1, 3), np.float32))
    assert windowed.tolist() == [[1.0, 0.5, 1.0]]


# ---------------------------------------------------------------------------------------------------- DRY


@pytest.mark.parametrize("probs, history, expected, multiplier, base, allowed, last_n, breakers", [
    ([0.25] * 4, [0, 1], [0.25] * 4, 1.0, 1.1, 2, 4, []),
    ([0.25] * 4, [0, 1, 2, 0, 1], [0.296923, 0.296923, 0.109232, 0.296923], 1.0, 1.1, 2, 5, []),
    (FIVE, [0, 1, 3, 4, 0, 1], FIVE, 1.0, 1.1, 2, 6, [[3]]),
    (FIVE, [0, 1, 2, 0, 1], [0.241818, 0.241818, 0.032727, 0.241818, 0.241818], 2.0, 1.1, 2, 5, []),
    (FIVE, [0, 1, 2, 3, 4, 0, 1], FIVE, 1.0, 1.1, 4, 7, []),
])
def test_dry(probs, history, expected, multiplier, base, allowed, last_n, breakers):
    dry = L.Dry(multiplier, base, allowed, last_n, [(seq[0], seq[1:]) for seq in breakers])
    check(kept_probs(apply(dry, probs, history)), expected)


def test_dry_breakers_with_a_tail_and_a_breaker_token_itself():
    """A two-token breaker (head 7, tail 0) stops a repeat reaching back across it; a token that is itself a
    one-token breaker is never penalised, whatever it would repeat."""
    history = np.array([[7, 0, 1, 2, 7, 0, 1]])  # "7 0 1" repeats: 2 would extend it (length 3)
    zeros = np.zeros((1, 8), np.float32)
    assert L.Dry(1.0, 2.0, 3, -1)(history, zeros)[0, 2] == -1.0
    assert L.Dry(1.0, 2.0, 3, -1, [(7, (0,))])(history, zeros)[0, 2] == 0.0  # the repeat stops at "7 0"
    assert L.Dry(1.0, 2.0, 2, -1, [(2, ())])(history, zeros)[0, 2] == 0.0


def test_dry_breaker_strings_over_a_vocabulary():
    """llama.cpp's breaker processing: tokens containing a breaker are one-token breakers, a token ending with a
    breaker's start heads its tokenized rest."""
    texts = ["a", "\n", "b\n\n", "x:", "y", "zx", ":"]
    found = L.breaker_sequences(["\n", "x:"], len(texts), texts.__getitem__, lambda text: [6] if text == ":" else [])
    assert sorted(found) == [(1, ()), (2, ()), (3, ()), (5, (6,))]


def test_the_repeat_lengths_are_a_plain_scans():
    """DRY's repeat lengths (the Z algorithm, linear) equal a plain scan's on histories of few distinct ids."""
    rng = np.random.default_rng(24)
    for _ in range(300):
        history = rng.integers(0, 3, rng.integers(1, 40)).tolist()
        plain = [0] + [next(n for n in range(len(history) + 1) if n + k >= len(history)
                            or history[n] != history[n + k]) for k in range(1, len(history))]
        assert L._z_function(history) == plain
