"""decoding.chain.processors against transformers 4.57.6's logits processors and warpers (torch only here).

Processed scores must agree exactly: the same -inf positions and finite values within 1e-5. Two things cannot
be reproduced bit for bit and are checked for what they are:
- torch's softmax uses its own vectorised exp (up to ~3e-6 relative from numpy's), so a token whose decision
  quantity (cumulative probability, probability ratio, typical cut) lies within 1e-5 of the cut may fall on
  either side;
- where a cut falls inside a group of exactly tied logits, ours are the survivors a stable sort keeps
  (tests/decoding/test_transformers_cases.py checks them on transformers' own cases), but torch.sort is not always
  stable, so here only the number of survivors must be equal.
Every other token must match. A float64 oracle below says which tokens are in either situation.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from transformers.generation import logits_process as lp

from decoding.chain import processors as P
from decoding.chain.chain import build_processors
from decoding.chain.parameters import PROCESSOR_ORDER
from decoding.chain.spec import LaneSpec
from tests.reference import generation_model, transformers_processors

TOL = 1e-5
EXAMPLES = int(os.environ.get("BRANCHPOINT_HYPOTHESIS_EXAMPLES", "60"))  # raise it for a deeper search
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ----------------------------------------------------------------------------------------------- inputs

KINDS = ("normal", "peaked", "flat", "ties", "neg_inf", "zipf", "huge")


def make_logits(kind: str, rows: int, vocab: int, seed: int) -> np.ndarray:
    """Random and adversarial logits: ties, -inf entries, very peaked, flat, LM-like, huge magnitudes."""
    rng = np.random.default_rng(seed)
    if kind == "normal":
        x = rng.standard_normal((rows, vocab)) * rng.uniform(0.1, 10)
    elif kind == "peaked":
        x = rng.standard_normal((rows, vocab))
        x[np.arange(rows), rng.integers(0, vocab, rows)] += 40.0
    elif kind == "flat":
        x = np.full((rows, vocab), rng.uniform(-5, 5))
    elif kind == "ties":
        x = rng.integers(-3, 3, (rows, vocab)).astype(np.float64) * rng.choice([0.5, 1.0, 2.0])
    elif kind == "neg_inf":
        x = rng.standard_normal((rows, vocab)) * 3
        x[rng.random((rows, vocab)) < rng.uniform(0.1, 0.99)] = -np.inf
        x[np.arange(rows), rng.integers(0, vocab, rows)] = rng.standard_normal(rows)  # at least one finite
    elif kind == "zipf":
        rank = np.arange(1, vocab + 1)
        base = 12 - 2.2 * np.log(rank)
        x = np.stack([rng.permutation(base + rng.standard_normal(vocab)) for _ in range(rows)])
    else:  # "huge": what a tiny temperature makes of ordinary logits
        x = rng.standard_normal((rows, vocab)) * 1e4
    return x.astype(np.float32)


@st.composite
def logit_batches(draw, max_vocab: int = 49152) -> np.ndarray:
    kind = draw(st.sampled_from(KINDS))
    vocab = draw(st.sampled_from([v for v in (1, 2, 3, 5, 17, 64, 300, 2048, 9000, 49152) if v <= max_vocab]))
    rows = draw(st.integers(1, 3))
    return make_logits(kind, rows, vocab, draw(st.integers(0, 2**32 - 1)))


small_arrays = hnp.arrays(
    np.float32,
    st.tuples(st.integers(1, 3), st.integers(1, 40)),
    elements=st.one_of(
        st.sampled_from([-np.inf, 0.0, 1.0, -1.0, 2.5]),
        st.floats(-30, 30, width=32),
    ),
)


def finite_rows(scores: np.ndarray) -> bool:
    return bool(np.isfinite(scores).any(axis=1).all())


def any_logits():
    return st.one_of(logit_batches(), small_arrays.filter(finite_rows))


def reference(processor, scores: np.ndarray, ids: np.ndarray | None = None) -> np.ndarray:
    ids = np.zeros((scores.shape[0], 1), np.int64) if ids is None else ids
    return processor(torch.from_numpy(ids), torch.from_numpy(scores.copy())).numpy()


def run(processor: P.Processor, scores: np.ndarray, ids: np.ndarray | None = None) -> np.ndarray:
    ids = np.zeros((scores.shape[0], 1), np.int64) if ids is None else ids
    before, ids_before = scores.copy(), ids.copy()
    out = processor(ids, scores)
    assert np.array_equal(scores, before, equal_nan=True) and np.array_equal(ids, ids_before), "input mutated"
    assert out.dtype == np.float32 and out.shape == scores.shape
    return out


# ---------------------------------------------------------------------------------------- comparison


def assert_same(ours: np.ndarray, theirs: np.ndarray, numeric=None, tied=None) -> None:
    """Same filtered positions and finite values within TOL, except where the oracle allows: tokens in
    `numeric` may go either way; tokens in `tied` may swap with each other (same survivor count)."""
    numeric = np.zeros(ours.shape, bool) if numeric is None else numeric
    tied = np.zeros(ours.shape, bool) if tied is None else tied
    ours_cut, theirs_cut = np.isneginf(ours), np.isneginf(theirs)
    differ = ours_cut != theirs_cut
    unexplained = differ & ~numeric & ~tied
    assert not unexplained.any(), f"cut differs at {np.argwhere(unexplained)[:10]}"
    for row in range(ours.shape[0]):
        if not numeric[row].any():
            assert (~ours_cut[row]).sum() == (~theirs_cut[row]).sum(), "survivor count differs"
    both = ~ours_cut & ~theirs_cut
    np.testing.assert_allclose(ours[both], theirs[both], rtol=TOL, atol=TOL)


def probs64(scores: np.ndarray) -> np.ndarray:
    x = scores.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def tied_with_rank(scores: np.ndarray, keep: int, descending: bool = True) -> np.ndarray:
    """Tokens tied with the keep-th best value, when that tie group straddles rank `keep`."""
    out = np.zeros(scores.shape, bool)
    for row, values in enumerate(scores):
        ordered = np.sort(values)[::-1] if descending else np.sort(values)
        if keep < values.size and ordered[keep - 1] == ordered[keep]:
            out[row] = values == ordered[keep - 1]
    return out


def top_p_oracle(scores: np.ndarray, top_p: float, keep: int) -> tuple[np.ndarray, np.ndarray]:
    """Per tie group (ascending, as transformers sorts): members sit at cumulative masses below + j * p for
    j = 1..n; numeric if one of those is within TOL of the cut, tied if the cut falls inside the group."""
    threshold = 1.0 - top_p
    numeric = np.zeros(scores.shape, bool)
    tied = tied_with_rank(scores, keep)
    for row, (values, p) in enumerate(zip(scores, probs64(scores), strict=True)):
        uniq, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
        each = np.zeros(uniq.size)
        each[inverse] = p
        below = np.concatenate([[0.0], np.cumsum(each * counts)[:-1]])
        with np.errstate(divide="ignore", invalid="ignore"):
            nearest = np.clip(np.round((threshold - below) / each), 1, counts)
        nearest[each == 0] = 1
        close = np.abs(below + nearest * each - threshold) < TOL
        removed = np.clip(np.floor((threshold - below) / np.where(each > 0, each, 1)), 0, counts)
        removed[each == 0] = np.where(below[each == 0] <= threshold, counts[each == 0], 0)
        straddles = (removed > 0) & (removed < counts)
        numeric[row] = close[inverse]
        tied[row] |= straddles[inverse]
    return numeric, tied


def min_p_oracle(scores: np.ndarray, min_p: float, keep: int) -> tuple[np.ndarray, np.ndarray]:
    probs = probs64(scores)
    cut = min_p * probs.max(axis=1, keepdims=True)
    numeric = np.abs(probs - cut) <= TOL * probs.max(axis=1, keepdims=True)
    return numeric, tied_with_rank(scores, keep)


def typical_oracle(scores: np.ndarray, mass: float, keep: int) -> tuple[np.ndarray, np.ndarray]:
    numeric = np.zeros(scores.shape, bool)
    tied = np.zeros(scores.shape, bool)
    for row, values in enumerate(scores.astype(np.float64)):
        with np.errstate(divide="ignore", invalid="ignore"):
            logp = values - values.max() - np.log(np.exp(values - values.max()).sum())
            p = np.exp(logp)
            entropy = -np.nansum(logp * p)
            shifted = np.abs(-logp - entropy)
        order = np.argsort(shifted, kind="stable")
        cumulative = np.cumsum(p[order])
        crossing = min(int((cumulative < mass).sum()), values.size - 1)
        boundary = shifted[order[crossing]]  # the token that crosses the mass: kept, with every token below it
        near = np.flatnonzero(np.abs(cumulative - mass) < TOL)
        cuts = shifted[order[np.concatenate([near, near + 1, [crossing]]).clip(0, values.size - 1)]]
        slack = 1e-4 * (1 + np.abs(cuts[np.isfinite(cuts)]).max(initial=0))
        if near.size:  # the crossing itself may move by a token: everything between the candidate cuts may differ
            numeric[row] = (shifted >= cuts.min() - slack) & (shifted <= cuts.max() + slack)
        else:  # the crossing is certain; only tokens as close to the boundary as float error may swap with it
            close = np.abs(shifted - boundary) <= slack
            numeric[row] = close if close.sum() > 1 else False
        ordered = shifted[order]
        if keep < values.size and abs(ordered[keep - 1] - ordered[keep]) <= slack:
            tied[row] = np.abs(shifted - ordered[keep - 1]) <= slack
    return numeric, tied


# --------------------------------------------------------------------------------------------- warpers


@SETTINGS
@given(scores=any_logits(), temperature=st.one_of(st.floats(1e-4, 10), st.sampled_from([1e-4, 0.5, 1.3])))
def test_temperature_matches(scores, temperature):
    ours = run(P.Temperature(temperature), scores)
    assert_same(ours, reference(lp.TemperatureLogitsWarper(float(temperature)), scores))


@SETTINGS
@given(scores=any_logits(), top_k=st.integers(1, 60000), keep=st.sampled_from([1, 2]))
def test_top_k_matches(scores, top_k, keep):
    ours = run(P.TopK(top_k, keep), scores)
    assert_same(ours, reference(lp.TopKLogitsWarper(top_k, min_tokens_to_keep=keep), scores))


@SETTINGS
@given(scores=any_logits(), top_p=st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.5, 0.9, 0.95, 1.0])),
       keep=st.sampled_from([1, 2, 3]))
def test_top_p_matches(scores, top_p, keep):
    ours = run(P.TopP(top_p, keep), scores)
    theirs = reference(lp.TopPLogitsWarper(top_p, min_tokens_to_keep=keep), scores)
    assert_same(ours, theirs, *top_p_oracle(scores, top_p, keep))


@SETTINGS
@given(scores=any_logits(), min_p=st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.05, 0.1, 1.0])),
       keep=st.sampled_from([1, 2, 3]))
def test_min_p_matches(scores, min_p, keep):
    ours = run(P.MinP(min_p, keep), scores)
    theirs = reference(lp.MinPLogitsWarper(min_p, min_tokens_to_keep=keep), scores)
    assert_same(ours, theirs, *min_p_oracle(scores, min_p, keep))


@SETTINGS
@given(scores=any_logits(), mass=st.one_of(st.floats(0.01, 0.99), st.sampled_from([0.2, 0.9, 0.95])),
       keep=st.sampled_from([1, 2, 3]))
def test_typical_matches(scores, mass, keep):
    ours = run(P.Typical(mass, keep), scores)
    theirs = reference(lp.TypicalLogitsWarper(mass, min_tokens_to_keep=keep), scores)
    assert_same(ours, theirs, *typical_oracle(scores, mass, keep))


def test_typical_one_means_every_token_kept():
    scores = make_logits("zipf", 2, 500, 0)
    assert np.array_equal(run(P.Typical(1.0), scores), scores)


# -------------------------------------------------------------------------------- penalties, constraints


def id_batches():
    @st.composite
    def build(draw):
        scores = draw(any_logits())
        rows, vocab = scores.shape
        length = draw(st.integers(1, 40))
        alphabet = draw(st.integers(1, min(vocab, 6)))  # few distinct ids: many repeats, many n-grams
        seed = draw(st.integers(0, 2**32 - 1))
        ids = np.random.default_rng(seed).integers(0, alphabet, (rows, length)) * (vocab // alphabet)
        return ids.astype(np.int64), scores

    return build()


@SETTINGS
@given(batch=id_batches(), penalty=st.one_of(st.floats(0.01, 10), st.sampled_from([0.5, 1.0, 1.2, 2.0])))
def test_repetition_penalty_matches(batch, penalty):
    ids, scores = batch
    ours = run(P.RepetitionPenalty(penalty), scores, ids)
    assert_same(ours, reference(lp.RepetitionPenaltyLogitsProcessor(float(penalty)), scores, ids))


@SETTINGS
@given(batch=id_batches(), size=st.integers(1, 6))
def test_no_repeat_ngram_matches(batch, size):
    ids, scores = batch
    ours = run(P.NoRepeatNGram(size), scores, ids)
    assert_same(ours, reference(lp.NoRepeatNGramLogitsProcessor(size), scores, ids))


@SETTINGS
@given(batch=id_batches(), min_new=st.integers(0, 30), prompt_len=st.integers(0, 30),
       eos=st.lists(st.integers(0, 70), min_size=1, max_size=3))
def test_min_new_tokens_matches(batch, min_new, prompt_len, eos):
    ids, scores = batch
    ours = run(P.MinNewTokens(min_new, prompt_len, eos), scores, ids)
    theirs = reference(lp.MinNewTokensLengthLogitsProcessor(prompt_len, min_new, eos), scores, ids)
    assert_same(ours, theirs)


def test_no_repeat_ngram_bans_the_known_continuation():
    ids = np.array([[5, 6, 7, 5, 6]])
    out = P.NoRepeatNGram(3)(ids, np.zeros((1, 10), np.float32))
    assert np.flatnonzero(np.isneginf(out[0])).tolist() == [7]


# ------------------------------------------------------------------------------------------- chains


ORACLES = {
    "epsilon_cutoff": lambda scores, p: (near_cut(probs64(scores), np.float64(p.epsilon)),),
    "eta_cutoff": lambda scores, p: (np.ones(scores.shape, bool),),  # checked on its own: test_eta_matches
    "top_p": lambda scores, p: top_p_oracle(scores, p.top_p, p.min_tokens_to_keep),
    "min_p": lambda scores, p: min_p_oracle(scores, p.min_p, p.min_tokens_to_keep),
    "typical_p": lambda scores, p: typical_oracle(scores, p.typical_p, p.min_tokens_to_keep),
}


def near_cut(probs: np.ndarray, cut: np.ndarray) -> np.ndarray:
    return np.abs(probs - cut) <= TOL * np.maximum(cut, 1e-30)


@SETTINGS
@given(scores=any_logits(), epsilon=st.floats(1e-6, 0.999), keep=st.sampled_from([1, 2, 3]))
def test_epsilon_matches(scores, epsilon, keep):
    ours = run(P.Epsilon(epsilon, keep), scores)
    theirs = reference(lp.EpsilonLogitsWarper(epsilon, min_tokens_to_keep=keep), scores)
    assert_same(ours, theirs, numeric=near_cut(probs64(scores), np.float64(epsilon)))


@SETTINGS
@given(scores=any_logits(), epsilon=st.floats(1e-6, 0.999), keep=st.sampled_from([1, 2, 3]))
def test_eta_matches(scores, epsilon, keep):
    ours = run(P.Eta(epsilon, keep), scores)
    theirs = reference(lp.EtaLogitsWarper(epsilon, min_tokens_to_keep=keep), scores)
    probs = probs64(scores)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.nansum(np.where(probs > 0, probs * np.log(probs), 0.0), axis=1, keepdims=True)
    eta = np.minimum(epsilon, np.sqrt(epsilon) * np.exp(-entropy))
    assert_same(ours, theirs, numeric=np.abs(probs - eta) <= 1e-4 * np.maximum(eta, 1e-30))


token_lists = st.lists(st.integers(0, 9), min_size=1, max_size=4)


@SETTINGS
@given(batch=st.integers(0, 2**32 - 1), suppress=st.lists(st.integers(0, 12), min_size=1, max_size=5))
def test_suppress_tokens_matches(batch, suppress):
    scores = make_logits("normal", 2, 10, batch)
    ours = run(P.SuppressTokens(suppress), scores)
    assert np.array_equal(ours, reference(lp.SuppressTokensLogitsProcessor(suppress), scores))


@SETTINGS
@given(batch=st.integers(0, 2**32 - 1), bad=st.lists(token_lists, min_size=1, max_size=5),
       eos=st.sampled_from([[], [2], [2, 7]]))
def test_bad_words_matches(batch, bad, eos):
    rng = np.random.default_rng(batch)
    ids, scores = rng.integers(0, 10, (3, 6)), make_logits("normal", 3, 10, batch)
    ours = run(P.BadWords(bad, eos), scores, ids)
    assert np.array_equal(ours, reference(lp.NoBadWordsLogitsProcessor(bad, eos or None), scores, ids))


@SETTINGS
@given(batch=st.integers(0, 2**32 - 1), biased=st.lists(st.tuples(token_lists, st.floats(-50, 50)), min_size=1,
                                                          max_size=6))
def test_sequence_bias_matches(batch, biased):
    rng = np.random.default_rng(batch)
    ids, scores = rng.integers(0, 10, (3, 6)), make_logits("normal", 3, 10, batch)
    pairs = [(tuple(tokens), float(bias)) for tokens, bias in biased]
    ours = run(P.SequenceBias(pairs), scores, ids)
    # transformers' dict form (its list form refuses id 0); a later equal sequence replaces an earlier one in both
    assert np.array_equal(ours, reference(lp.SequenceBiasLogitsProcessor(dict(pairs)), scores, ids))



@SETTINGS
@given(batch=id_batches(), temperature=st.floats(0.1, 3), top_k=st.integers(0, 100),
       top_p=st.floats(0.05, 1.0), min_p=st.floats(0.0, 0.3), typical_p=st.floats(0.05, 1.0),
       penalty=st.floats(0.5, 2.0), beams=st.sampled_from([1, 4]), epsilon=st.sampled_from([0.0, 1e-4]),
       eta=st.sampled_from([0.0, 1e-4]), extras=st.booleans())
def test_build_processors_matches_transformers_chain(
    batch, temperature, top_k, top_p, min_p, typical_p, penalty, beams, epsilon, eta, extras
):
    """A lane's chain is transformers' own chain from `_get_logits_processor` (same processors, same order,
    same min_tokens_to_keep, no top_k default), and each step gives transformers' step result."""
    from transformers import GenerationConfig
    from transformers.generation.utils import GenerationMixin

    ids, scores = batch
    # transformers refuses biased ids beyond the vocabulary, and its eta fails on a row filtered entirely (torch's
    # Categorical refuses the NaN its entropy makes there): min_new_tokens removes the eos ids and the 2-gram ban
    # one more token, so a row needs two finite scores besides the eos ids
    assume(scores.shape[1] >= 8 or not (extras or eta))
    assume(not eta or bool((np.isfinite(np.delete(scores, [1, 2], axis=1)).sum(axis=1) >= 2).all()))
    config = {"do_sample": True, "temperature": temperature, "top_k": top_k, "top_p": top_p, "min_p": min_p,
              "typical_p": typical_p, "repetition_penalty": penalty, "no_repeat_ngram_size": 2,
              "min_new_tokens": 3, "epsilon_cutoff": epsilon, "eta_cutoff": eta}
    if extras:  # transformers' constraints beyond the core set
        config.update(suppress_tokens=[3], bad_words_ids=[[4], [0, 5]], sequence_bias=[[[6], 1.5], [[0, 7], -2.0]])
    eos = [1, 2]
    prompt_len = ids.shape[1] - 1
    ours = build_processors(config, prompt_len=prompt_len, eos_ids=eos, num_beams=beams)
    if extras:  # GenerationConfig holds sequence_bias as transformers' dict form
        config["sequence_bias"] = {tuple(ids): bias for ids, bias in config["sequence_bias"]}
    generation_config = GenerationConfig(**config, num_beams=beams, eos_token_id=eos)
    generation_config._eos_token_tensor = torch.tensor(eos)
    theirs = GenerationMixin._get_logits_processor(GenerationMixin(), generation_config, prompt_len)
    # transformers adds MinPLogitsWarper even for min_p=0, where it removes nothing; Branchpoint leaves it out
    theirs = [p for p in theirs if not (isinstance(p, lp.MinPLogitsWarper) and p.min_p == 0)]
    assert [p.name for p in ours] == [TRANSFORMERS_NAMES[type(p).__name__] for p in theirs]
    current = scores
    for mine, their in zip(ours, theirs, strict=True):
        if mine.name == "top_k":  # transformers folds min_tokens_to_keep into top_k
            assert max(mine.top_k, mine.min_tokens_to_keep) == their.top_k
        elif hasattr(their, "min_tokens_to_keep"):
            assert mine.min_tokens_to_keep == their.min_tokens_to_keep
        expected = reference(their, current, ids)
        oracle = ORACLES[mine.name](current, mine) if mine.name in ORACLES else ()
        assert_same(run(mine, current, ids), expected, *oracle)
        current = expected


TRANSFORMERS_NAMES = {  # spelled out here, not read from decoding.chain.parameters (the table under test)
    "RepetitionPenaltyLogitsProcessor": "repetition_penalty",
    "NoRepeatNGramLogitsProcessor": "no_repeat_ngram_size",
    "MinNewTokensLengthLogitsProcessor": "min_new_tokens",
    "TemperatureLogitsWarper": "temperature",
    "TopKLogitsWarper": "top_k",
    "TopPLogitsWarper": "top_p",
    "MinPLogitsWarper": "min_p",
    "TypicalLogitsWarper": "typical_p",
    "EpsilonLogitsWarper": "epsilon_cutoff",
    "EtaLogitsWarper": "eta_cutoff",
    "SuppressTokensLogitsProcessor": "suppress_tokens",
    "NoBadWordsLogitsProcessor": "bad_words_ids",
    "SequenceBiasLogitsProcessor": "sequence_bias",
}


def test_default_order_is_transformers_order_and_the_spec_order():
    """The order is read from transformers: the processors its generate() builds with every one of them on;
    llama.cpp's samplers take their places in it (decoding.chain.parameters)."""
    everything = {"do_sample": True, "sequence_bias": [[[1], 1.0]], "repetition_penalty": 1.1,
                  "no_repeat_ngram_size": 3, "bad_words_ids": [[5]], "min_new_tokens": 2, "suppress_tokens": [7],
                  "temperature": 0.7, "top_k": 40, "top_p": 0.9, "min_p": 0.05, "typical_p": 0.95,
                  "epsilon_cutoff": 0.001, "eta_cutoff": 0.001}
    theirs = transformers_processors(generation_model(16), LaneSpec("all", **everything), 4, [2])
    transformers_order = [TRANSFORMERS_NAMES[type(processor).__name__] for processor in theirs]
    assert len(transformers_order) == len(TRANSFORMERS_NAMES)
    names = [p.name for p in build_processors(everything, 4, [2], 1)]
    ours = [name for name in PROCESSOR_ORDER if name in TRANSFORMERS_NAMES.values()]
    assert names == transformers_order == ours
    assert LaneSpec("all", **everything).processors() == transformers_order
    llama = {"frequency_penalty": 0.5, "dry_multiplier": 0.8, "top_n_sigma": 2.0, "xtc_probability": 0.5}
    names = [p.name for p in build_processors({**everything, **llama}, 4, [2], 1)]
    # dynamic temperature takes temperature's place; mirostat refuses the truncations (LaneSpec says so)
    assert names == [name for name in PROCESSOR_ORDER if name not in ("dynatemp_range", "mirostat")]
    with_both = {"do_sample": True, "temperature": 0.7, "dynatemp_range": 0.5, "mirostat": 2}
    assert [p.name for p in build_processors(with_both, 4, [2], 1)] == ["dynatemp_range", "mirostat"]


def test_build_applies_only_what_the_config_names():
    assert build_processors({"do_sample": True}, 4, [2]) == []
    offs = {"do_sample": True, "top_k": 0, "top_p": 1.0, "min_p": 0, "typical_p": 1.0,
            "repetition_penalty": 1.0, "temperature": 1.0, "no_repeat_ngram_size": 0, "min_new_tokens": 0}
    assert build_processors(offs, 4, [2]) == []
    [top_p] = build_processors({"do_sample": True, "top_p": 0.9}, 4, [2])
    assert isinstance(top_p, P.TopP) and top_p.min_tokens_to_keep == 1
    # warpers only under do_sample (transformers ignores them otherwise); penalties always
    greedy = {"temperature": 0.7, "top_k": 5, "repetition_penalty": 1.3}
    assert [p.name for p in build_processors(greedy, 4, [2])] == ["repetition_penalty"]
    assert P.ignored_settings(greedy) == ["temperature", "top_k"]
    # min_new_tokens needs an eos id (transformers skips it without one)
    assert build_processors({"min_new_tokens": 3}, 4, []) == []


def test_build_uses_beam_min_tokens_to_keep():
    processors = build_processors({"do_sample": True, "top_k": 1, "top_p": 0.5}, 4, [2], num_beams=4)
    assert [p.min_tokens_to_keep for p in processors] == [2, 2]
    [top_p] = build_processors({"do_sample": True, "top_p": 0.5}, 4, [2, 3], num_beams=2)
    assert top_p.min_tokens_to_keep == 3


def test_custom_order():
    config = {"do_sample": True, "temperature": 0.7, "top_k": 10, "top_p": 0.9}
    order = ["top_p", "min_p", "top_k", "temperature"]
    names = [p.name for p in build_processors(config, 4, [2], order=order)]
    assert names == ["top_p", "top_k", "temperature"]
    with pytest.raises(ValueError, match="missing temperature"):
        build_processors(config, 4, [2], order=["top_p", "top_k"])
    with pytest.raises(ValueError, match="distinct names"):
        build_processors(config, 4, [2], order=["top_p", "top_k", "temperature", "bogus"])


# ------------------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: LaneSpec("x", do_sample=True, temperature=0.0), r"invalid temperature=0.0: allowed a float in \(0, "),
        (lambda: LaneSpec("x", do_sample=True, temperature=-1), r"invalid temperature=-1: allowed a float in \(0, "),
        (lambda: LaneSpec("x", do_sample=True, temperature=float("nan")), r"invalid temperature=nan: allowed a "),
        (lambda: LaneSpec("x", do_sample=True, temperature="hot"), r"invalid temperature='hot': allowed a float "),
        (lambda: build_processors({"do_sample": True, "top_k": 2.5}, 3, [2]), r"invalid top_k=2.5: allowed an "),
        (lambda: build_processors({"do_sample": True, "top_k": True}, 3, [2]), r"invalid top_k=True: allowed an "),
        (lambda: LaneSpec("x", do_sample=True, top_p=1.5), r"invalid top_p=1.5: allowed a float in \[0, 1\]"),
        (lambda: LaneSpec("x", do_sample=True, top_p=-0.1), r"invalid top_p=-0.1: allowed a float in \[0, 1\]"),
        (lambda: LaneSpec("x", do_sample=True, min_p=1.01), r"invalid min_p=1.01: allowed a float in \[0, 1\]"),
        (lambda: LaneSpec("x", do_sample=True, typical_p=0.0), r"invalid typical_p=0.0: allowed a float in \(0, "),
        (lambda: LaneSpec("x", repetition_penalty=0), r"invalid repetition_penalty=0: allowed a float in \(0, "),
        (lambda: LaneSpec("x", no_repeat_ngram_size=-1), r"invalid no_repeat_ngram_size=-1: allowed an integer >= 0"),
        (lambda: LaneSpec("x", min_new_tokens=-1), r"invalid min_new_tokens=-1: allowed an integer >= 0"),
        (lambda: build_processors({"do_sample": True, "top_p": 2.0}, 3, [2]), r"invalid top_p=2.0: allowed"),
        (lambda: build_processors({"do_sample": True, "top_k": -5}, 3, [2]), r"invalid top_k=-5: allowed an "),
    ],
)
def test_invalid_parameters_are_named_with_their_range(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_names_and_descriptions():
    assert P.TopP(0.9).describe() == "top_p=0.9"
    assert P.TopP(0.9, 2).describe() == "top_p=0.9, min_tokens_to_keep=2"
    assert P.TopK(50).to_dict() == {"name": "top_k", "top_k": 50, "min_tokens_to_keep": 1}
    assert P.MinNewTokens(3, 10, [2]).describe() == "min_new_tokens=3"
    assert P.Epsilon(0.01).describe() == "epsilon_cutoff=0.01"
    assert P.BadWords([(1,), (2, 3)]).describe() == "bad_words_ids=2 sequences"


def test_scores_must_be_two_dimensional():
    with pytest.raises(ValueError, match="2-D"):
        P.TopK(3)(np.zeros((1, 2), np.int64), np.zeros(5, np.float32))


def test_apply_processors_never_returns_its_input():
    scores = make_logits("normal", 2, 50, 1)
    out = P.apply_processors([], np.zeros((2, 1), np.int64), scores)
    assert out is not scores and np.array_equal(out, scores)


@pytest.mark.parametrize("processor", [P.NoRepeatNGram(1), P.NoRepeatNGram(2), P.NoRepeatNGram(3),
                                       P.MinNewTokens(3, prompt_len=4, eos_ids=[9, 2, 2, 70])])
def test_a_mask_processor_bans_what_it_says_it_bans(processor):
    # row_batch derives a masked row from `banned` without calling the processor: both must agree
    rng = np.random.default_rng(5)
    for length in range(1, 12):
        ids = rng.integers(0, 12, (3, length))
        out = processor(ids, np.zeros((3, 64), np.float32))
        for row, history in enumerate(ids):
            banned = processor.banned(history, 64)
            assert banned.tolist() == np.flatnonzero(out[row] == -np.inf).tolist()
