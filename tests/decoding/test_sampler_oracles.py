"""Brute-force oracles for llama.cpp's samplers and the step statistics, written out in numpy from llama.cpp's
definitions (src/llama-sampler.cpp), not from Branchpoint's code: each test runs a real lane over logits and a
history it chooses (tests/lane_oracle.py) and compares the recorded distribution, kept count, mu or statistic.

- DRY: a plain quadratic scan of every earlier position of the window (llama.cpp's Z-algorithm computes the
  same), random short histories over a small alphabet (so repeats of every length, allowed_length - 1 included,
  come before candidates), random allowed lengths, windows and breakers, and hand-made boundary cases.
- Mirostat 1 and 2: mu written out over many steps from the raw logits and the tokens the lane chose.
- Penalties compared in logits (log-probability differences) for counts 1, 2 and 3 and a window.
- Temperature away from 1, dynamic temperature on rows that are not uniform, top-nσ and XTC with its coin.
- Entropy and varentropy of a known three-point distribution, raw and processed; stage masses of a chain.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from decoding.chain.spec import LaneSpec
from tests.lane_oracle import FunctionSource, LetterTokenizer, first_step, probs_of, run_lane, softmax

LN2 = math.log(2.0)


def penalties_in_logits(record, logits: np.ndarray, untouched: int) -> np.ndarray:
    """What the lane subtracted from each logit, read from its processed log-probabilities relative to a token
    it left alone (inf where a token's probability underflowed to 0)."""
    probs = probs_of(record.top, logits.size)
    with np.errstate(divide="ignore"):
        logp = np.log(probs)
    shifted = logp - logp[untouched]
    return (logits.astype(np.float64) - logits[untouched]) - shifted


# ---------------------------------------------------------------------------------------------------------- DRY


def dry_oracle(history: list[int], multiplier: float, base: float, allowed: int, last_n: int,
               breakers: list[tuple[int, tuple[int, ...]]]) -> dict[int, float]:
    """llama.cpp's DRY penalty per token, by a plain scan: the window is the last `last_n` ids (-1: all); the
    repeat limit is how far back the most recent complete breaker lies (head i tokens from the end, its tail the
    tokens after it: limit i - len(tail)); for every earlier position j, n is the length of the longest run of
    tokens ending at j equal to the run ending the window (capped by the limit); where n >= allowed the token
    after j gets multiplier * base^(n - allowed), the largest n counting, unless it is a one-token breaker."""
    window = history if last_n == -1 else history[-last_n:] if last_n > 0 else []
    size = len(window)
    if multiplier == 0.0 or size <= allowed:
        return {}
    limit = size
    for i in range(size):
        head = window[size - 1 - i]
        tails = [tail for h, tail in breakers if h == head and len(tail) <= i
                 and all(tail[o] == window[size - 1 - i + 1 + o] for o in range(len(tail)))]
        if tails:
            limit = i - max(len(tail) for tail in tails)
            break
    if limit < allowed:
        return {}
    longest: dict[int, int] = {}
    for j in range(size - 1):
        n = 0
        while n <= j and window[j - n] == window[size - 1 - n]:
            n += 1
        n = min(n, limit)
        if n >= allowed:
            follower = window[j + 1]
            longest[follower] = max(longest.get(follower, 0), n)
    singles = {h for h, tail in breakers if not tail}
    max_exponent = int(88.7228391 / math.log(base)) if base > 1.000001 else 0
    return {token: multiplier * base ** (min(n - allowed, max_exponent) if max_exponent > 0 else n - allowed)
            for token, n in longest.items() if token not in singles}


def breakers_of(strings: tuple[str, ...]) -> list[tuple[int, tuple[int, ...]]]:
    """The breakers llama.cpp makes from strings of letters over LetterTokenizer's one-letter pieces: a one-letter
    string is a one-token breaker; a longer one is its first letter's token heading the rest's tokens."""
    letters = LetterTokenizer.LETTERS
    return [(letters.index(s[0]), tuple(letters.index(c) for c in s[1:])) for s in strings]


VOCAB = 12  # ids 0-4 form the histories; 5-11 are never penalised


def assert_dry_as_oracle(history, multiplier, base, allowed, last_n, strings=()):
    rng = np.random.default_rng(len(history) * 1000 + allowed)
    logits = rng.normal(0.0, 1.0, VOCAB).astype(np.float32)
    spec = LaneSpec("dry", do_sample=True, seed=1, dry_multiplier=multiplier, dry_base=base,
                    dry_allowed_length=allowed, dry_penalty_last_n=last_n, dry_sequence_breakers=tuple(strings))
    record = first_step(spec, history, logits, LetterTokenizer())
    got = penalties_in_logits(record, logits, untouched=VOCAB - 1)
    expected = np.zeros(VOCAB)
    for token, penalty in dry_oracle(history, multiplier, base, allowed, last_n, breakers_of(strings)).items():
        expected[token] = penalty
    shown = np.minimum(expected, 30.0), np.minimum(got, 30.0)  # beyond 30 nats a probability is ~0 in float32
    assert np.allclose(*shown, atol=2e-4), (history, allowed, last_n, strings, expected, got)


def test_dry_equals_the_plain_scan_on_random_short_histories():
    rng = np.random.default_rng(34)
    for case in range(250):
        history = rng.integers(0, int(rng.integers(2, 5)), int(rng.integers(1, 14))).tolist()
        allowed = int(rng.integers(0, 5))
        last_n = int(rng.choice([-1, -1, len(history), max(1, len(history) - 3), 4]))
        strings = () if case % 3 else tuple(rng.choice(["d", "ab", "cd", "b", "ca"], int(rng.integers(1, 3))))
        assert_dry_as_oracle(history, float(rng.choice([0.5, 0.8, 1.0])), float(rng.choice([1.0, 1.5, 1.75])),
                             allowed, last_n, strings)


@pytest.mark.parametrize("allowed", [1, 2, 3, 4])
def test_dry_leaves_a_repeat_one_shorter_than_allowed_and_penalises_one_of_allowed_length(allowed):
    """"x y ... (allowed - 1 tokens) c" then the same allowed - 1 tokens: c would make a repeat of length allowed
    (not penalised: the repeat the text holds is allowed - 1 long); with one token more it is penalised."""
    run = [5, 6, 7][: allowed - 1]
    short = [0, *run, 3, 1, *run]
    # the window ends with `run` (allowed - 1 tokens), which occurred before followed by 3
    assert_dry_as_oracle(short, 1.0, 1.75, allowed, -1)
    assert dry_oracle(short, 1.0, 1.75, allowed, -1, []).get(3) is None
    longer = [0, *run, 3, 1, 0, *run]  # now "0 run" (allowed tokens) repeats, followed by 3 before
    assert_dry_as_oracle(longer, 1.0, 1.75, allowed, -1)
    assert dry_oracle(longer, 1.0, 1.75, allowed, -1, [])[3] == pytest.approx(1.0)


def test_dry_stops_a_repeat_at_the_latest_breaker_and_never_penalises_a_one_token_breaker():
    a, b, c, d = 0, 1, 2, 3
    history = [a, b, c, d, a, b, d, a, b]  # "a b" followed by c before, "d a b" (3 tokens) by d
    assert dry_oracle(history, 1.0, 2.0, 2, -1, []) == {c: 1.0, d: 2.0}
    assert_dry_as_oracle(history, 1.0, 2.0, 2, -1)
    assert_dry_as_oracle(history, 1.0, 2.0, 2, -1, ("d",))  # the last d caps repeats at 2; d itself is spared
    assert dry_oracle(history, 1.0, 2.0, 2, -1, breakers_of(("d",))) == {c: 1.0}
    assert_dry_as_oracle(history, 1.0, 2.0, 2, -1, ("ab",))  # the last "a b" is itself a breaker: no repeat
    assert dry_oracle(history, 1.0, 2.0, 2, -1, breakers_of(("ab",))) == {}


# ------------------------------------------------------------------------------------------------------ mirostat


def zipf_logits(vocab: int, exponent: float = 1.1) -> callable:
    """Logits of a Zipf-like distribution (p ~ rank^-exponent) whose order and noise follow the history."""
    def logits_of(history: list[int]) -> np.ndarray:
        rng = np.random.default_rng([len(history), *history[-3:]])
        ranks = rng.permutation(vocab) + 1
        return (-exponent * np.log(ranks) + rng.normal(0.0, 0.3, vocab)).astype(np.float32)
    return logits_of


def mirostat_kept(version: int, probs: np.ndarray, mu: float) -> np.ndarray | None:
    """The ids mirostat keeps (llama.cpp), None where float rounding could decide it (a token's surprise or k
    within 1e-3 of its threshold): version 2 keeps surprise -log2 p <= mu (at least the best); version 1 estimates
    the Zipf exponent s from the 100 best sorted probabilities and keeps the k best, k = (e 2^mu / (1 - N^-e))^(1/s),
    e = s - 1."""
    order = np.argsort(-probs, kind="stable")
    if version == 2:
        surprise = -np.log2(probs[order])
        if np.any(np.abs(surprise - mu) < 1e-3):
            return None
        return order[: max(1, int(np.count_nonzero(surprise <= mu)))]
    sorted_probs = probs[order]
    count = min(99, probs.size - 1)
    t = np.log((np.arange(count) + 2) / (np.arange(count) + 1))
    b = np.log(sorted_probs[:count] / sorted_probs[1 : count + 1])
    s = float(np.sum(t * b) / np.sum(t * t))
    e = s - 1.0
    k = (e * 2.0**mu / (1.0 - probs.size ** -e)) ** (1.0 / s)
    if abs(k - round(k)) < 1e-3:
        return None
    return order[: max(int(k), 1)]


@pytest.mark.parametrize("version, tau, eta", [(2, 3.0, 0.1), (2, 1.5, 0.4), (1, 3.0, 0.1), (1, 4.0, 0.3)])
def test_mirostat_mu_follows_the_written_out_update_over_many_steps(version, tau, eta):
    """mu starts at 2 tau; each step keeps what mu allows, the lane draws from it renormalised, and mu moves by
    -eta * (-log2 p(chosen after the cut) - tau)."""
    vocab = 300
    logits_of = zipf_logits(vocab)
    spec = LaneSpec("mirostat", do_sample=True, seed=5, mirostat=version, mirostat_tau=tau, mirostat_eta=eta)
    prompt = [1, 2, 3]
    lane = run_lane(spec, FunctionSource(logits_of, vocab), prompt, 60)
    mu, history, checked = 2.0 * tau, list(prompt), 0
    mus = []
    for record in lane.steps:
        assert record.mirostat_mu == pytest.approx(mu, abs=1e-4)
        probs = softmax(logits_of(history))
        kept = mirostat_kept(version, probs, mu)
        if kept is not None:
            assert record.kept == kept.size and record.token_id in kept
            assert record.prob == pytest.approx(probs[record.token_id] / probs[kept].sum(), rel=1e-4)
            checked += 1
        mus.append(mu)
        mu = mu - eta * (-math.log2(record.prob) - tau)
        history.append(record.token_id)
    assert checked >= 50
    assert max(mus) - min(mus) > 0.5  # mu really moved: the test sees its update, not its start


# ----------------------------------------------------------------------------------------------------- penalties


@pytest.mark.parametrize("frequency, presence, last_n", [(0.5, 0.0, None), (0.0, 0.7, None), (0.4, 0.3, None),
                                                         (-0.3, 0.2, None), (0.6, 0.25, 6)])
def test_frequency_and_presence_penalties_in_logits_for_counts_one_two_three(frequency, presence, last_n):
    """logit - (count * frequency + presence) for every token of the window: counts 1, 2, 3 (and 0); the window
    is the last penalty_last_n ids."""
    history = [7, 3, 7, 4, 0, 1, 2, 1, 2, 2]  # outside a window of 6: 7, 3, 7, 4
    logits = np.random.default_rng(3).normal(0, 1, 10).astype(np.float32)
    spec = LaneSpec("pen", do_sample=True, seed=1, frequency_penalty=frequency, presence_penalty=presence,
                    penalty_last_n=last_n)
    got = penalties_in_logits(first_step(spec, history, logits), logits, untouched=9)
    window = history if last_n is None else history[-last_n:]
    expected = np.zeros(10)
    for token in set(window):
        expected[token] = window.count(token) * frequency + presence
    assert sorted(window.count(t) for t in set(window)) == ([1, 2, 3] if last_n else [1, 1, 1, 2, 2, 3])
    assert np.allclose(got, expected, atol=1e-5), (got, expected)


def test_repetition_penalty_and_the_llama_penalties_together_in_logits():
    """repetition_penalty divides a positive logit and multiplies a negative one (once per token, whatever its
    count); in llama.cpp's one penalties stage then the frequency and presence terms."""
    history = [0, 1, 1, 2, 2, 2]
    logits = np.array([1.5, -0.5, 2.0, 0.3, -1.0, 0.0], np.float32)
    spec = LaneSpec("pen", do_sample=True, seed=1, repetition_penalty=1.3, frequency_penalty=0.2,
                    presence_penalty=0.1)
    got = penalties_in_logits(first_step(spec, history, logits), logits, untouched=5)
    after_repetition = {0: 1.5 / 1.3, 1: -0.5 * 1.3, 2: 2.0 / 1.3}
    expected = np.zeros(6)
    for token, count in ((0, 1), (1, 2), (2, 3)):
        expected[token] = logits[token] - (after_repetition[token] - count * 0.2 - 0.1)
    assert np.allclose(got, expected, atol=1e-5), (got, expected)


# -------------------------------------------------------------------------------------------------- temperatures


@pytest.mark.parametrize("temperature", [0.3, 0.7, 1.6, 2.5])
def test_temperature_divides_the_logits(temperature):
    logits = np.random.default_rng(1).normal(0, 2, 16).astype(np.float32)
    record = first_step(LaneSpec("t", do_sample=True, seed=1, temperature=temperature), [0], logits)
    assert np.allclose(probs_of(record.top, 16), softmax(logits / temperature), atol=1e-6)


@pytest.mark.parametrize("temperature, spread, exponent, shape", [
    (1.0, 0.5, 1.0, "peaked"), (0.8, 0.6, 2.0, "two peaks"), (1.5, 1.0, 0.5, "peaked"), (0.6, 0.3, 1.0, "flat-ish"),
    (0.4, 0.6, 1.0, "peaked"),  # the low end clamps at 0
])
def test_dynamic_temperature_on_rows_that_are_not_uniform(temperature, spread, exponent, shape):
    """T = max(0, t - r) + (t + r - max(0, t - r)) * (H / log N)^exponent, H the entropy of softmax(logits)."""
    rng = np.random.default_rng(len(shape))
    logits = {"peaked": np.r_[6.0, rng.normal(0, 1, 11)], "two peaks": np.r_[3.0, 3.0, rng.normal(0, 0.5, 10)],
              "flat-ish": rng.normal(0, 0.8, 12)}[shape].astype(np.float32)
    probs = softmax(logits)
    entropy = -np.sum(probs * np.log(probs))
    low, high = max(0.0, temperature - spread), temperature + spread
    dynamic = low + (high - low) * (entropy / math.log(logits.size)) ** exponent
    assert 0.05 < entropy / math.log(logits.size) < 0.999 and abs(dynamic - 1.0) > 0.05  # not the identity
    spec = LaneSpec("dyn", do_sample=True, seed=1, temperature=temperature, dynatemp_range=spread,
                    dynatemp_exponent=exponent)
    record = first_step(spec, [0], logits)
    assert np.allclose(probs_of(record.top, logits.size), softmax(logits / dynamic), atol=1e-5)


# --------------------------------------------------------------------------------------------------- top-nσ, XTC


@pytest.mark.parametrize("n", [0.5, 1.0, 2.0])
def test_top_n_sigma_keeps_the_logits_within_n_deviations_of_the_best(n):
    for seed in range(20):
        logits = np.random.default_rng(seed).normal(0, 2, 24).astype(np.float32)
        cut = logits.max() - n * np.std(logits.astype(np.float64))
        if np.min(np.abs(logits - cut)) < 1e-4:
            continue
        record = first_step(LaneSpec("nsigma", do_sample=True, seed=1, top_n_sigma=n), [0], logits)
        kept = logits >= cut
        assert np.allclose(probs_of(record.top, 24), softmax(np.where(kept, logits, -np.inf)), atol=1e-6)


def test_xtc_removes_every_top_choice_but_the_least_likely_when_its_coin_falls_below_p():
    """llama.cpp: with >= 2 candidates and threshold <= 0.5, a coin <= probability drops every candidate of
    probability >= threshold except the last (least likely) of them."""
    acted = 0
    for seed in range(40):
        logits = np.random.default_rng(seed).normal(0, 1.5, 10).astype(np.float32)
        threshold = [0.05, 0.1, 0.2][seed % 3]
        spec = LaneSpec("xtc", do_sample=True, seed=seed, xtc_probability=0.6, xtc_threshold=threshold)
        record = first_step(spec, [0], logits)
        probs = softmax(logits)
        above = np.flatnonzero(probs >= threshold)
        expected = probs
        if record.xtc_coin <= 0.6 and above.size > 1:
            least = above[np.argmin(probs[above])]
            expected = softmax(np.where(np.isin(np.arange(10), above) & (np.arange(10) != least), -np.inf, logits))
            acted += 1
        assert np.allclose(probs_of(record.top, 10), expected, atol=1e-6), (seed, record.xtc_coin)
    assert acted >= 10


# ------------------------------------------------------------------------------------------------- statistics


def test_entropy_and_varentropy_of_a_known_three_point_distribution():
    """p = (1/2, 1/4, 1/4): H = 1.5 ln 2 nats, varentropy = E[(ln p)^2] - H^2 = ln(2)^2 / 4 nats squared; at
    temperature 1/2 the distribution is (2/3, 1/6, 1/6)."""
    logits = np.log(np.array([0.5, 0.25, 0.25], np.float32))
    record = first_step(LaneSpec("t", do_sample=True, seed=1, temperature=0.5), [0], logits)
    assert record.entropy_raw == pytest.approx(1.5 * LN2, rel=1e-6)
    assert record.varentropy_raw == pytest.approx(LN2**2 / 4, rel=1e-5)
    processed = np.array([2 / 3, 1 / 6, 1 / 6])
    entropy = -np.sum(processed * np.log(processed))
    assert record.entropy == pytest.approx(entropy, rel=1e-6)
    assert record.varentropy == pytest.approx(np.sum(processed * np.log(processed) ** 2) - entropy**2, rel=1e-5)


def test_each_stage_keeps_its_share_of_the_distribution_before_it():
    """top_k=6 then top_p=0.6 then temperature: each stage's mass is the probability, under the distribution the
    stage received, of what it kept."""
    logits = np.random.default_rng(2).normal(0, 1.5, 16).astype(np.float32)
    spec = LaneSpec("chain", do_sample=True, seed=1, top_k=6, top_p=0.6, temperature=0.7,
                    processor_order=["top_k", "top_p", "temperature"])
    record = first_step(spec, [0], logits)
    order = np.argsort(-logits, kind="stable")
    raw = softmax(logits)
    after_k = np.where(np.isin(np.arange(16), order[:6]), logits, -np.inf)
    probs_k = softmax(after_k)
    cumulative = np.cumsum(probs_k[order[:6]])
    top_p_kept = order[: int(np.searchsorted(cumulative, 0.6)) + 1]
    names = [s.name for s in record.stages]
    assert names == ["top_k", "top_p", "temperature"]
    k_stage, p_stage, t_stage = record.stages
    assert (k_stage.kept, p_stage.kept, t_stage.kept) == (6, top_p_kept.size, top_p_kept.size)
    assert k_stage.mass == pytest.approx(raw[order[:6]].sum(), rel=1e-6)
    assert p_stage.mass == pytest.approx(probs_k[top_p_kept].sum(), rel=1e-6)
    assert t_stage.mass == pytest.approx(1.0)
