"""A lane's Chain has llama.cpp's sampler interface (src/llama-sampling.cpp, llama_sampler_i): its stages apply in
order, one selector chooses, `accept` moves the state the next step uses (mirostat's mu), `reset` goes back to the
state the chain was made with, `clone` copies it with its state (XTC's coin still drawn from the clone's own
selector), and an adaptive lane's widened stages share the stateful ones."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from decoding.chain.chain import build_chain
from decoding.chain.selectors import ARGMAX, Candidates
from decoding.chain.spec import LaneSpec
from decoding.records.stats import Softmax

HISTORY = np.array([[1, 5, 9]], dtype=np.int64)


def logits(step: int, vocab: int = 40) -> np.ndarray:
    return (np.random.default_rng(step).standard_normal((1, vocab)) * 2.5).astype(np.float32)


def walk(chain, steps: int = 8) -> list[tuple]:
    """Each step: apply the stages, let the selector choose, accept the token; what the state was and what was
    chosen."""
    seen = []
    for step in range(steps):
        processed = chain.apply(HISTORY, logits(step))[0]
        softmax = Softmax.of(processed)
        token, draw = chain.selector.select(Candidates(processed, softmax, 5))
        record = SimpleNamespace(xtc_coin=None, mirostat_mu=None)  # the fields record_state writes
        chain.record_state(record)
        prob = float(np.exp(processed[token] - processed.max()) / softmax.total) if softmax else 0.0
        chain.accept(token, prob)
        seen.append((token, draw.u if draw else None, record.xtc_coin, record.mirostat_mu))
    return seen


XTC = LaneSpec("xtc", do_sample=True, xtc_probability=0.6, xtc_threshold=0.05, top_k=20, seed=3)
MIROSTAT = LaneSpec("mirostat", do_sample=True, mirostat=2, mirostat_tau=2.0, mirostat_eta=0.3, seed=4)


def test_the_chain_ends_in_one_selector_of_the_lanes_kind():
    assert build_chain(LaneSpec("greedy", repetition_penalty=1.2), 3, [2]).selector is ARGMAX
    sampled = build_chain(XTC, 3, [2])
    assert sampled.selector.name == "dist" and sampled.selector.seed == 3
    assert [stage.name for stage in sampled.stages] == ["top_k", "xtc_probability"]


def test_mirostat_accepts_the_chosen_tokens_and_not_a_forced_one():
    chain = build_chain(MIROSTAT, 3, [2])
    (mirostat,) = chain.stages
    first = mirostat.mu
    chain.accept(7, 0.5, forced=True)
    assert mirostat.mu == first
    chain.accept(7, 0.5)  # 1 bit of surprise, below tau: mu rises by eta
    assert mirostat.mu == np.float32(first) + np.float32(0.3) * np.float32(1.0) != first
    chain.reset()
    assert mirostat.mu == first


def test_a_clone_goes_on_as_the_original_would_and_on_its_own():
    for spec in (XTC, MIROSTAT):
        chain = build_chain(spec, 3, [2])
        walk(chain, 3)
        clone = chain.clone()
        assert walk(clone) == walk(chain)  # the same state: the same coins, draws, mu and tokens
        ahead = walk(clone, 2)  # the clone moves alone
        assert walk(chain, 2) == ahead


def test_a_clone_flips_xtc_s_coin_with_its_own_generator():
    clone = build_chain(XTC, 3, [2]).clone()
    xtc = clone.stages[-1]
    assert xtc.coin.__self__ is clone.selector


def test_reset_goes_back_to_the_chain_as_it_was_made():
    for spec in (XTC, MIROSTAT):
        chain = build_chain(spec, 3, [2])
        walk(chain, 5)
        chain.reset()
        assert walk(chain) == walk(build_chain(spec, 3, [2]))


def test_an_adaptive_lanes_widened_stages_share_its_stateful_ones():
    spec = LaneSpec("adaptive", do_sample=True, adaptive=True, xtc_probability=0.5, temperature=0.8, seed=5)
    chain = build_chain(spec, 3, [2])
    xtc = next(stage for stage in chain.stages if stage.stateful)
    assert [stage.name for stage in chain.widened] == ["temperature", "top_k", "xtc_probability"]
    assert chain.widened[-1] is xtc and chain.stateful
    sure = Softmax.of(np.array([20.0, 0.0, 0.0], np.float32))
    assert chain.step(sure)[0] == "argmax" and chain.step(sure)[2] is ARGMAX
