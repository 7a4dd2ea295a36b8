"""transformers' own test cases (tests/generation/test_logits_process.py) for the processors Branchpoint has,
ported: the same inputs, the same expected outputs, run on decoding.chain.processors.

Where the original draws random input ids (`ids_tensor`), a fixed numpy generator draws them and the expected
result is transformers' own processors on the same inputs (torch). Ties at a cut must come out as a stable
sort has them: the processor-list case cuts top-p inside a group of tied tokens.
"""

from __future__ import annotations

import numpy as np
import pytest

from decoding.chain import processors as P

NO_IDS = np.zeros((2, 1), dtype=np.int64)


def uniform(rows: int, vocab: int) -> np.ndarray:
    return np.full((rows, vocab), 1.0 / vocab, dtype=np.float32)


def ramp(rows: int, vocab: int) -> np.ndarray:
    """transformers' ramp: arange(vocab) - vocab // 2 in every row, the second row times 100."""
    logits = np.tile(np.arange(vocab, dtype=np.float32) - vocab // 2, (rows, 1))
    logits[1] *= 100.0
    return logits


def kept(scores: np.ndarray) -> list[list[bool]]:
    return (scores > -np.inf).tolist()


def filtered_dist(processor: P.Processor, dist: list[list[float]]) -> np.ndarray:
    with np.errstate(divide="ignore"):
        logits = np.log(np.array(dist, dtype=np.float32))
    return np.exp(processor(np.zeros((logits.shape[0], 1), np.int64), logits))


def kept_counts(processor: P.Processor, logits: np.ndarray) -> list[int]:
    return (processor(np.zeros((logits.shape[0], 1), np.int64), logits) > -np.inf).sum(axis=1).tolist()


# ------------------------------------------------------------------------------------------- the cases


def test_temperature_dist_warper():
    scores = uniform(2, 20)
    scores[1, 5] = 1 / 20 + 0.1
    scores[1, 10] = 1 / 20 - 0.4
    probs = P.softmax32(scores)
    sharp = P.softmax32(P.Temperature(0.5)(NO_IDS, scores))
    smooth = P.softmax32(P.Temperature(1.3)(NO_IDS, scores))
    np.testing.assert_allclose(probs[0], sharp[0], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(probs[0], smooth[0], rtol=1e-3, atol=1e-3)
    assert probs[1].max() < sharp[1].max() and probs[1].min() > sharp[1].min()
    assert probs[1].max() > smooth[1].max() and probs[1].min() < smooth[1].min()


def test_repetition_penalty_dist_process():
    ids = np.array([[0, 1], [5, 0]])
    scores = uniform(2, 10)
    scores[0, 0] = -(1 / 10)
    scores[1, 5] = 4 / 10
    out = P.RepetitionPenalty(2.0)(ids, scores)
    assert out[0, 0] == pytest.approx(-(1 / 10) * 2)
    assert out[0, 1] == pytest.approx((1 / 10) / 2)
    assert out[1, 0] == pytest.approx((1 / 10) / 2)
    assert out[1, 5] == pytest.approx((4 / 10) / 2)


@pytest.mark.parametrize("eos", [[0], [0, 18]])
def test_new_min_length_dist_processor(eos):
    processor = P.MinNewTokens(3, prompt_len=5, eos_ids=eos)
    rng = np.random.default_rng(0)
    for length, banned in ((5, True), (6, True), (7, True), (8, False), (15, False)):
        out = processor(rng.integers(0, 20, (4, length)), uniform(4, 20))
        assert np.isneginf(out[:, eos]).all() == banned and np.isneginf(out).any() == banned


def test_top_k_dist_warper():
    logits = np.tile(np.arange(10, dtype=np.float32), (2, 1))
    logits[1:, :5] += 10
    assert (~np.array(kept(P.TopK(3)(NO_IDS, logits)))).tolist() == [
        7 * [True] + 3 * [False], 2 * [True] + 3 * [False] + 5 * [True]]
    safety = P.TopK(1, min_tokens_to_keep=3)
    assert kept_counts(safety, uniform(2, 5)) == [5, 5]  # a uniform distribution is not changed
    assert kept_counts(safety, np.tile(np.arange(5, dtype=np.float32), (2, 1))) == [3, 3]


def test_top_p_dist_warper():
    out = filtered_dist(P.TopP(0.8), [[0.3, 0.1, 0.1, 0.5], [0.15, 0.3, 0.3, 0.25]])
    np.testing.assert_allclose(out, [[0.3, 0.0, 0.0, 0.5], [0.0, 0.3, 0.3, 0.25]], rtol=1e-3, atol=1e-3)
    assert kept_counts(P.TopP(0.9, min_tokens_to_keep=2), ramp(2, 10)) == [3, 2]


def test_min_p_dist_warper():
    dist = [[0.9, 0.0274, 0.047, 0.0274], [0.15, 0.3, 0.3, 0.25], [0.97, 0.01, 0.01, 0.01]]
    expected = [[0.9, 0.0, 0.047, 0.0], [0.15, 0.3, 0.3, 0.25], [0.97, 0.0, 0.0, 0.0]]
    np.testing.assert_allclose(filtered_dist(P.MinP(0.05), dist), expected, rtol=1e-3, atol=1e-3)
    assert kept_counts(P.MinP(0.9, min_tokens_to_keep=2), ramp(2, 10)) == [2, 2]


def test_typical_dist_warper():
    out = filtered_dist(P.Typical(0.5), [[0.97, 0.01, 0.01, 0.01], [0.4, 0.2, 0.2, 0.2]])
    np.testing.assert_allclose(out, [[0.97, 0.0, 0.0, 0.0], [0.0, 0.2, 0.2, 0.2]], rtol=1e-3, atol=1e-3)
    assert kept_counts(P.Typical(0.5, min_tokens_to_keep=3), uniform(2, 5)) == [5, 5]
    assert kept_counts(P.Typical(0.7, min_tokens_to_keep=2), ramp(2, 10)) == [2, 2]


def test_no_repeat_ngram_dist_processor():
    ids = np.array([[1, 1, 2, 1], [0, 1, 0, 1]])
    assert (~np.array(kept(P.NoRepeatNGram(2)(ids, uniform(2, 3))))).tolist() == [
        [False, True, True], [True, False, False]]
    assert (~np.array(kept(P.NoRepeatNGram(3)(ids, uniform(2, 3))))).tolist() == [
        [False, False, False], [True, False, False]]


def test_no_repeat_ngram_dist_processor_banned_token_reappears():
    out = P.NoRepeatNGram(3)(np.array([[1, 2, 5, 7, 8, 5, 1, 2]]), uniform(1, 10))
    assert np.flatnonzero(np.isneginf(out[0])).tolist() == [5]


def test_no_repeat_ngram_dist_processor_sequence_shorter_than_ngram():
    assert not np.isneginf(P.NoRepeatNGram(3)(np.array([[1, 2], [0, 1]]), uniform(2, 3))).any()


def test_processor_list_against_transformers_ties_included():
    """The original applies a list of processors one by one and as a LogitsProcessorList; here Branchpoint's
    chain against transformers' own classes on the same uniform scores, whose top-p cut (after top-k keeps
    every tied token) falls inside a group of tied tokens: the survivors must be the same tokens."""
    torch = pytest.importorskip("torch")
    from transformers.generation import logits_process as lp

    ids = np.random.default_rng(24).integers(0, 15, (4, 10))
    scores = uniform(4, 15)
    ours = scores
    for processor in (P.Temperature(0.5), P.RepetitionPenalty(2.0), P.TopK(3), P.TopP(0.8), P.NoRepeatNGram(2)):
        ours = processor(ids, ours)
    theirs = torch.from_numpy(scores.copy())
    torch_ids = torch.from_numpy(ids)
    for processor in (lp.TemperatureLogitsWarper(0.5), lp.RepetitionPenaltyLogitsProcessor(2.0),
                      lp.TopKLogitsWarper(3), lp.TopPLogitsWarper(0.8), lp.NoRepeatNGramLogitsProcessor(2)):
        theirs = processor(torch_ids, theirs)
    theirs = theirs.numpy()
    assert kept(ours) == kept(theirs)
    np.testing.assert_allclose(ours[ours > -np.inf], theirs[theirs > -np.inf], rtol=1e-6)


def test_top_p_keeps_the_tied_tokens_a_stable_ascending_sort_keeps():
    """The rule the processor-list case relies on, without torch: four tied tokens, half the mass."""
    out = P.TopP(0.5)(np.zeros((1, 1), np.int64), np.zeros((1, 4), np.float32))
    assert np.flatnonzero(out[0] > -np.inf).tolist() == [2, 3]


def test_epsilon_dist_warper():
    out = filtered_dist(P.Epsilon(0.1), [[0.87, 0.099, 0.001, 0.03], [0.4, 0.299, 0.101, 0.2]])
    np.testing.assert_allclose(out, [[0.87, 0, 0, 0], [0.4, 0.299, 0.101, 0.2]], rtol=1e-3, atol=1e-3)
    assert kept_counts(P.Epsilon(5e-2, min_tokens_to_keep=2), ramp(2, 10)) == [3, 2]


def test_eta_dist_warper():
    out = filtered_dist(P.Eta(0.0625), [[0.0, 0.1, 0.8, 0.1], [0.01, 0.04, 0.9, 0.05]])
    np.testing.assert_allclose(out, [[0.0, 0.1, 0.8, 0.1], [0.0, 0.0, 0.9, 0.0]], rtol=1e-3, atol=1e-3)
    assert kept_counts(P.Eta(0.1, min_tokens_to_keep=2), ramp(2, 10)) == [2, 2]


def test_no_bad_words_dist_processor():
    ids = np.array([[0, 1, 3, 1], [0, 1, 0, 1]])
    bad = P.BadWords([[1], [4], [1, 0], [0, 1, 2], [1, 3, 1, 3]], eos_ids=[4])
    assert (~np.array(kept(bad(ids, uniform(2, 5))))).tolist() == [
        [True, True, False, True, False], [True, True, True, False, False]]
    np.testing.assert_allclose(P.BadWords([[4]], eos_ids=[4])(ids, uniform(2, 5)), uniform(2, 5))


def test_bias_dist_processor():
    ids = np.array([[0, 1, 3, 1], [0, 1, 0, 1]])
    bias = [((1,), 100.0), ((4,), 100.0), ((1, 0), -100.0), ((0, 1, 2), -100.0), ((1, 3, 1, 3), -100.0),
            ((1, 3, 1, 3, 1, 3), -100.0)]
    out = P.SequenceBias(bias)(ids, np.zeros((2, 5), np.float32))
    assert out.tolist() == [[-100.0, 100.0, 0.0, -100.0, 100.0], [-100.0, 100.0, -100.0, 0.0, 100.0]]
