"""Parity on the real default model (slow; CI prepares the model): greedy and beam search lanes
token-identical to transformers generate() on the same dequantized weights, beam sequence scores within
1e-4, and the headline CLI command."""

from __future__ import annotations

import pytest

from decoding.chain.spec import LaneSpec, assign_seeds, default_lanes
from decoding.engine.engine import Engine
from decoding.records.trace import PromptInfo
from tests.reference import assert_beams_as_transformers, assert_greedy_as_transformers, load_hf_model, onnx_engine

# Loading the GGUF reference and running beams take minutes on a shared 2-core machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

RAW_PROMPTS = [
    "The capital of France is",
    "Although I was tired, I still decided to",
    "我虽然很累，但还是决定",
]


@pytest.fixture(scope="module")
def real(default_model_dir):
    return onnx_engine(default_model_dir)


@pytest.fixture(scope="module")
def reference(default_model_dir):
    return load_hf_model(default_model_dir)


def prompts(tokenizer) -> list[PromptInfo]:
    raw = [PromptInfo(text, tokenizer.encode(text)) for text in RAW_PROMPTS]
    chat_text = "Write one sentence about the sea."
    chat = PromptInfo(chat_text, tokenizer.encode_chat(chat_text), chat=True)
    return [*raw, chat]


def test_greedy_lane_equals_transformers_greedy(real, reference):
    engine, tokenizer, eos = real
    assert_greedy_as_transformers(engine, reference, prompts(tokenizer), eos, 24)


@pytest.mark.parametrize("num_beams", [2, 4])
def test_beam_lanes_equal_transformers_beam_search(real, reference, num_beams):
    engine, tokenizer, eos = real
    assert_beams_as_transformers(engine, reference, prompts(tokenizer), eos, num_beams, 16)


def test_greedy_in_the_default_five_lanes_equals_greedy_alone(real):
    engine, tokenizer, _ = real
    prompt = prompts(tokenizer)[1]
    alone = engine.run(prompt, [LaneSpec("greedy")], max_new_tokens=16).lanes[0].token_ids
    together = engine.run(prompt, assign_seeds(default_lanes(), 0), max_new_tokens=16)
    assert together.lane("greedy").token_ids == alone
    assert len(together.lanes) == 5 and together.timing.steps == 15


def test_cli_capital_of_france(capsys, default_model_dir):
    import main

    assert main.main(["run", "--prompt", "The capital of France is", "--max-new-tokens", "8"]) == 0
    assert " Paris." in capsys.readouterr().out


def test_fanout_members_equal_the_lanes_run_alone(real):
    """Eight seeds of two sampled lanes beside greedy, in one batched run: each member's tokens are the lane's
    own run alone with that seed."""
    from decoding.analysis.fanout import fan_out_sampled

    engine, tokenizer, _ = real
    prompt = PromptInfo(RAW_PROMPTS[1], tokenizer.encode(RAW_PROMPTS[1]))
    lanes = [LaneSpec("greedy"), LaneSpec("T 1.0", do_sample=True, temperature=1.0, seed=11),
             LaneSpec("top-p 0.9", do_sample=True, top_p=0.9, seed=3)]
    specs = fan_out_sampled(lanes, 8)
    trace = engine.run(prompt, specs, max_new_tokens=24)
    for spec in specs:
        alone = engine.run(prompt, [spec.with_changes(name="alone", fanout=None)], max_new_tokens=24).lanes[0]
        assert trace.lane(spec.name).token_ids == alone.token_ids, spec.name
    assert trace.analysis.fanouts["T 1.0"].distinct_continuations > 1


def test_batched_rows_give_the_per_row_run_file(real):
    # a 32-member fan-out beside the default lanes on the real model (the runtime's RowSummary): the run file
    # decided batched equals the one decided lane by lane, timings apart
    from decoding.analysis.fanout import fan_out
    from tests.decoding.test_row_batch import without_timings

    engine, tokenizer, eos = real
    specs = default_lanes() + fan_out(LaneSpec("T 1.0", do_sample=True, temperature=1.0, min_new_tokens=4), 32)
    prompt = PromptInfo(RAW_PROMPTS[1], tokenizer.encode(RAW_PROMPTS[1]))
    files = [
        without_timings(Engine(engine.source, tokenizer, eos, batched_rows=batched).run(
            prompt, specs, max_new_tokens=16, base_seed=7))
        for batched in (True, False)
    ]
    assert files[0] == files[1]
