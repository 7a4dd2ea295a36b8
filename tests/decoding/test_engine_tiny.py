"""The engine on the real runtime with the tiny exported Llama: batching independence and token-exact parity
with transformers generate() (greedy, beam search with sequence scores) on the same weights."""

from __future__ import annotations

import pytest

from decoding.chain.spec import Branch, LaneSpec
from decoding.engine.engine import Engine
from decoding.records.trace import PromptInfo
from tests.reference import hf_beam_search, hf_generate, load_hf_model

PROMPTS = ["The capital of France is", "Once upon a time there was", "def add(a, b):"]
SIX_LANES = [
    LaneSpec("greedy"),
    LaneSpec("beam-4", num_beams=4),
    LaneSpec("top-k", do_sample=True, top_k=50, seed=1),
    LaneSpec("top-p", do_sample=True, top_p=0.9, seed=2),
    LaneSpec("hot", do_sample=True, temperature=1.3, seed=3),
    LaneSpec("min-p", do_sample=True, min_p=0.05, seed=4),
]


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from runtime.decoder import OnnxDecoder
    from runtime.tokenizer import Tokenizer

    decoder = OnnxDecoder(tiny_model_dir, device="cpu")
    tokenizer = Tokenizer.from_model_dir(tiny_model_dir)
    return decoder, tokenizer


@pytest.fixture(scope="module")
def hf_model(tiny_model_dir, tiny_hf_dir):
    return load_hf_model(tiny_model_dir, tiny_hf_dir)


def engine_of(tiny) -> Engine:
    decoder, tokenizer = tiny
    return Engine(decoder, tokenizer, list(decoder.eos_token_ids))


def prompt(tokenizer, text: str) -> PromptInfo:
    return PromptInfo(text, tokenizer.encode(text))


def test_greedy_inside_six_lanes_equals_greedy_alone(tiny):
    engine = engine_of(tiny)
    p = prompt(tiny[1], PROMPTS[0])
    alone = engine.run(p, [LaneSpec("greedy")], max_new_tokens=20).lane("greedy").token_ids
    batched = engine.run(p, SIX_LANES, max_new_tokens=20)
    assert batched.lane("greedy").token_ids == alone
    seeded = engine.run(p, SIX_LANES[3:4], max_new_tokens=20).lane("top-p").token_ids
    assert batched.lane("top-p").token_ids == seeded


def test_branch_on_the_runtime_matches_a_forced_rerun(tiny):
    engine = engine_of(tiny)
    p = prompt(tiny[1], PROMPTS[1])
    trace = engine.run(
        p, [LaneSpec("greedy"), LaneSpec("b", branch=Branch("greedy", 3, 100))], max_new_tokens=12
    )
    parent, branch = trace.lane("greedy").token_ids, trace.lane("b").token_ids
    assert branch[:3] == parent[:3] and branch[3] == 100
    rerun = engine.run(p, [LaneSpec("f", forced={3: 100})], max_new_tokens=12).lanes[0].token_ids
    assert rerun == branch  # the forked KV row continues exactly like a fresh computation


@pytest.mark.parametrize("text", PROMPTS)
def test_greedy_equals_transformers_greedy(tiny, hf_model, text):
    engine = engine_of(tiny)
    p = prompt(tiny[1], text)
    eos = list(tiny[0].eos_token_ids)
    ours = engine.run(p, [LaneSpec("greedy")], max_new_tokens=24).lanes[0].token_ids
    (theirs,), _ = hf_generate(hf_model, p.ids, 24, eos, do_sample=False, num_beams=1)
    assert ours == theirs


@pytest.mark.parametrize("num_beams", [2, 4])
@pytest.mark.parametrize("text", PROMPTS)
def test_beam_equals_transformers_beam_search(tiny, hf_model, text, num_beams):
    engine = engine_of(tiny)
    p = prompt(tiny[1], text)
    eos = list(tiny[0].eos_token_ids)
    spec = LaneSpec("beam", num_beams=num_beams, num_return_sequences=num_beams)
    lane = engine.run(p, [LaneSpec("greedy"), spec], max_new_tokens=16).lane("beam")
    sequences, scores = hf_beam_search(hf_model, p.ids, 16, eos, num_beams)
    assert lane.sequences == sequences
    assert lane.sequence_scores == pytest.approx(scores, abs=1e-4)
    assert lane.token_ids == sequences[0]


def test_fanout_members_equal_the_lanes_run_alone(tiny):
    from decoding.analysis.fanout import fan_out_sampled

    engine = engine_of(tiny)
    p = prompt(tiny[1], PROMPTS[1])
    specs = fan_out_sampled([LaneSpec("greedy"), LaneSpec("T 1.0", do_sample=True, temperature=1.0, seed=11)], 8)
    trace = engine.run(p, specs, max_new_tokens=12)
    assert trace.timing.steps == 11  # every member's row in the same batched step
    for spec in specs:
        alone = engine.run(p, [spec.with_changes(name="alone", fanout=None)], max_new_tokens=12).lanes[0]
        assert trace.lane(spec.name).token_ids == alone.token_ids, spec.name
    assert trace.analysis.fanouts["T 1.0"].distinct_continuations > 1


def direct_forced_decode(decoder, spec, ids: list[int], steps: int, step: int, token: int) -> list[int]:
    """The lane decoded with the decoder directly, no engine: one row, its processors, a draw every step (the
    one at `step` discarded for `token`)."""
    import numpy as np

    from decoding.chain.chain import build_processors
    from decoding.chain.processors import apply_processors
    from decoding.chain.selectors import Sampler

    processors = build_processors(spec.to_config(), len(ids), list(decoder.eos_token_ids), 1)
    sampler = Sampler(spec.seed) if spec.do_sample else None
    state, logits = decoder.prefill(ids)
    history, tokens = list(ids), []
    for index in range(steps):
        scores = apply_processors(processors, np.array([history]), np.reshape(logits, (1, -1)))[0]
        chosen = sampler.draw(scores).token_id if sampler else int(np.argmax(scores))
        tokens.append(token if index == step else chosen)
        history.append(tokens[-1])
        state, logits = decoder.step(state, [0], [tokens[-1]])
    return tokens


@pytest.mark.parametrize(
    "spec", [LaneSpec("hot", do_sample=True, temperature=1.3, top_k=40, seed=7), LaneSpec("greedy")]
)
def test_branch_not_taken_replay_equals_a_forced_run_made_directly(tiny, spec):
    from decoding.analysis.branch_not_taken import replay_spec
    from decoding.engine.replay import replay_not_taken
    from decoding.records.trace import CriticalPoint

    engine = engine_of(tiny)
    p = prompt(tiny[1], PROMPTS[0])
    original = engine.run(p, [spec], max_new_tokens=12)
    lane, step = original.lanes[0], 5
    runner_up = next(t.id for t in lane.steps[step].top if t.id != lane.token_ids[step])
    replay = replay_spec(spec, CriticalPoint(step, "draw", lane.token_ids[step], runner_up, 0.0, 0.0))
    after = replay_not_taken(engine, original, replay)
    beside = engine.run(p, [spec, replay], max_new_tokens=12).lane(replay.name)
    direct = direct_forced_decode(tiny[0], spec, p.ids, 12, step, runner_up)
    assert after.token_ids == beside.token_ids == direct
    assert direct[:step] == lane.token_ids[:step] and direct[step] == runner_up


def test_batched_rows_give_the_per_row_run_file_on_the_runtime(tiny):
    # the runtime's RowSummary (ONNX Runtime kernels) for the raw rows, fan-outs with a processor that only
    # filters, beams and branches mixed in: the run file is the same either way, timings apart
    from decoding.analysis.fanout import fan_out
    from decoding.records import jsonio
    from tests.decoding.test_row_batch import without_timings

    decoder, tokenizer = tiny
    specs = SIX_LANES + [LaneSpec("branch", branch=Branch("greedy", 2, 7))] + fan_out(
        LaneSpec("fan", do_sample=True, temperature=1.0, min_new_tokens=6, seed=5), 12)
    p = prompt(tokenizer, PROMPTS[2])
    runs = [Engine(decoder, tokenizer, list(decoder.eos_token_ids), batched_rows=batched).run(
        p, specs, max_new_tokens=12, base_seed=0) for batched in (True, False)]
    assert without_timings(runs[0]) == without_timings(runs[1])
    assert len({tuple(lane.token_ids) for lane in jsonio.loads(without_timings(runs[0])).lanes}) > 4
