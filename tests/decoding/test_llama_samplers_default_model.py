"""The llama.cpp samplers on the real default model (slow; CI prepares it): DRY's sequence breakers over its
vocabulary, and a run with DRY, XTC, penalties and mirostat that replays exactly."""

from __future__ import annotations

import pytest

from decoding.chain.spec import LaneSpec
from decoding.engine.engine import Engine
from decoding.engine.lane_state import dry_breakers
from decoding.engine.replay import compare, replay
from decoding.records.trace import PromptInfo

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def real(default_model_dir):
    from runtime.decoder import OnnxDecoder
    from runtime.tokenizer import Tokenizer

    decoder = OnnxDecoder(default_model_dir, device="cpu")
    return decoder, Tokenizer.from_model_dir(default_model_dir)


def test_dry_breakers_over_the_default_vocabulary(real):
    decoder, tokenizer = real
    breakers = dry_breakers(tokenizer, decoder.vocab_size, ("\n", ":", '"', "*"))
    heads = {head for head, tail in breakers if not tail}
    newline, colon = tokenizer.encode("\n", add_special_tokens=False), tokenizer.encode(":", add_special_tokens=False)
    assert newline[0] in heads and colon[0] in heads
    # every one-token breaker's text holds a breaker
    assert all(any(s in tokenizer.piece(head) for s in ("\n", ":", '"', "*")) for head in heads)


def test_a_run_with_the_llama_cpp_samplers_replays_exactly(real):
    decoder, tokenizer = real
    engine = Engine(decoder, tokenizer, list(decoder.eos_token_ids))
    prompt = "Once upon a time, in a small village by the sea,"
    lanes = [LaneSpec("dry xtc", do_sample=True, dry_multiplier=0.8, xtc_probability=0.5, frequency_penalty=0.2,
                      penalty_last_n=64, seed=1),
             LaneSpec("mirostat", do_sample=True, mirostat=2, mirostat_tau=4.0, seed=2),
             LaneSpec("llama order", do_sample=True, top_k=40, top_p=0.95, min_p=0.05, temperature=0.8,
                      repetition_penalty=1.1, processor_order="llama.cpp", seed=3)]
    trace = engine.run(PromptInfo(prompt, tokenizer.encode(prompt)), lanes, max_new_tokens=16)
    assert all(lane.error is None and len(lane.token_ids) == 16 for lane in trace.lanes)
    assert compare(trace, replay(engine, trace)) == []


def test_the_transformers_constraints_are_token_exact_with_generate(real, default_model_dir):
    """A greedy lane with suppress_tokens, bad_words_ids and sequence_bias (and a beam lane with them) gives
    transformers generate()'s tokens on the same weights: the ids the plain greedy text would use are
    suppressed, banned after their prefix and biased, so each constraint changes the text."""
    from tests.reference import hf_generate, load_hf_model

    decoder, tokenizer = real
    eos = list(decoder.eos_token_ids)
    engine = Engine(decoder, tokenizer, eos)
    prompt = PromptInfo("The capital of France is", tokenizer.encode("The capital of France is"))
    plain = engine.run(prompt, [LaneSpec("greedy")], max_new_tokens=12).lanes[0].token_ids
    constraints = {"suppress_tokens": (plain[0],), "bad_words_ids": ((plain[1], plain[2]), (plain[4],)),
                   "sequence_bias": (((plain[5],), -4.0), ((plain[2], plain[3]), 3.0))}
    reference = load_hf_model(default_model_dir)
    hf_kwargs = {"suppress_tokens": list(constraints["suppress_tokens"]),
                 "bad_words_ids": [list(ids) for ids in constraints["bad_words_ids"]],
                 "sequence_bias": {ids: bias for ids, bias in constraints["sequence_bias"]}}
    for spec, extra in ((LaneSpec("greedy", **constraints), {"do_sample": False, "num_beams": 1}),
                        (LaneSpec("beam", num_beams=2, **constraints), {"do_sample": False, "num_beams": 2})):
        lane = engine.run(prompt, [spec], max_new_tokens=12).lanes[0]
        (theirs, *_), _ = hf_generate(reference, prompt.ids, 12, eos, **extra, **hf_kwargs)
        assert lane.token_ids == theirs and lane.token_ids != plain, spec.name
