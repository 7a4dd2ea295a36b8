"""Per-stage records (decoding.chain.stages): each stage's kept count, kept mass, and the chosen token's rank and
probability, against a float64 reference built stage by stage from the chain's own output rows; the same in
both decision paths (tests/decoding/test_row_batch.py and tests/decoding/test_llama_samplers_engine.py compare whole
run files)."""

from __future__ import annotations

import numpy as np
import pytest

from decoding.chain.chain import build_processors
from decoding.chain.spec import LaneSpec
from decoding.engine.engine import Engine
from decoding.records.trace import PromptInfo
from tests.fake_source import FakeSource, FakeTokenizer, SummarizingSource

PROMPT = PromptInfo("p", [1, 2, 3, 1, 2])


def softmax64(row: np.ndarray) -> np.ndarray:
    x = row.astype(np.float64)
    e = np.exp(x - x[np.isfinite(x)].max())
    return e / e.sum()


def reference_stages(chain, history: list[int], raw: np.ndarray, chosen: int) -> list[tuple]:
    ids, scores, previous, out = np.array([history]), raw[None], softmax64(raw), []
    for processor in chain:
        scores = processor(ids, scores)
        row = scores[0]
        finite = row > -np.inf
        probs = softmax64(row)
        order = sorted(range(row.size), key=lambda i: (-row[i], i))
        rank = order.index(chosen) if finite[chosen] else None
        out.append((processor.name, int(finite.sum()), float(previous[finite].sum()), rank, float(probs[chosen])))
        previous = probs
    return out


LANES = [
    LaneSpec("masks then others", do_sample=True, no_repeat_ngram_size=2, bad_words_ids=((7,),), top_k=30,
             temperature=0.7, top_p=0.8, seed=1),
    LaneSpec("masks only", no_repeat_ngram_size=2, min_new_tokens=3),
    LaneSpec("llama", do_sample=True, repetition_penalty=1.3, frequency_penalty=0.5, top_k=40, min_p=0.05,
             temperature=1.2, processor_order="llama.cpp", seed=2),
    LaneSpec("one stage", do_sample=True, top_p=0.5, seed=3),
]


@pytest.mark.parametrize("source_class", [FakeSource, SummarizingSource])
def test_each_stage_of_each_step_against_the_chain_run_stage_by_stage(source_class):
    trace = Engine(source_class(vocab_size=500), FakeTokenizer(), eos_token_ids=[2]).run(
        PROMPT, LANES, max_new_tokens=8)
    for spec, lane in zip(LANES, trace.lanes, strict=True):
        chain = build_processors(spec.to_config(), len(PROMPT.ids), [2], order=spec.processor_order)
        assert lane.steps and all(len(r.stages) == len(chain) for r in lane.steps)
        for step, record in enumerate(lane.steps):
            history = [*PROMPT.ids, *lane.token_ids[:step]]
            raw = FakeSource(vocab_size=500).logits_for(history)
            for got, want in zip(record.stages, reference_stages(chain, history, raw, record.token_id), strict=True):
                assert (got.name, got.kept, got.rank) == (want[0], want[1], want[3]), (lane.name, step)
                assert got.mass == pytest.approx(want[2], rel=1e-5, abs=1e-7)
                assert got.prob == pytest.approx(want[4], rel=1e-5, abs=1e-7)
            assert record.stages[-1].prob == record.prob and record.stages[-1].kept == record.kept


def test_a_token_a_stage_removes_has_no_rank_after_it():
    forced = LaneSpec("forced", do_sample=True, top_k=2, temperature=0.8, forced={0: 400}, seed=4)
    record = Engine(FakeSource(vocab_size=500), FakeTokenizer(), eos_token_ids=[]).run(
        PROMPT, [forced], max_new_tokens=1).lanes[0].steps[0]
    temperature, top_k = record.stages  # transformers' order: temperature first
    assert temperature.rank is not None and temperature.mass == 1.0 and temperature.kept == 500
    assert top_k.rank is None and top_k.prob == 0.0 and top_k.kept == 2 and 0 < top_k.mass < 1


def test_lanes_without_processors_record_no_stages():
    trace = Engine(FakeSource(vocab_size=50), FakeTokenizer(), eos_token_ids=[]).run(
        PROMPT, [LaneSpec("greedy"), LaneSpec("beam", num_beams=2)], max_new_tokens=2)
    assert all(r.stages is None for lane in trace.lanes for r in lane.steps)


def test_the_order_pair_differs_by_its_order_only_and_its_stages_say_so():
    from decoding.chain.parameters import order_preset
    from decoding.chain.spec import ORDER_PAIR

    first, second = ORDER_PAIR
    assert first.to_config() | {"processor_order": None} == second.to_config() | {"processor_order": None}
    assert [order_preset(spec.to_config(), spec.processor_order) for spec in ORDER_PAIR] == ["transformers",
                                                                                             "llama.cpp"]
    trace = Engine(FakeSource(vocab_size=500, peak=1.0), FakeTokenizer(), eos_token_ids=[]).run(
        PROMPT, list(ORDER_PAIR), max_new_tokens=6)
    names = [[stage.name for stage in lane.steps[0].stages] for lane in trace.lanes]
    assert names == [["temperature", "top_k", "top_p", "min_p"], ["top_k", "top_p", "min_p", "temperature"]]
    assert [r.draw for r in trace.lanes[0].steps[:1]] == [r.draw for r in trace.lanes[1].steps[:1]]  # one seed


def test_a_ban_on_a_token_that_held_all_of_raw_s_float32_mass_records_the_rest_s_own_distribution():
    """Token 0 is 3000 logits above the rest: raw's float32 softmax gives every other token weight 0. Banned at the
    front (bad_words_ids), the rest is still a distribution: the stage keeps ~0 of raw's mass, the next stages
    and the chosen token's probability are the rest's own (the fuzz found a division by that zero total)."""
    from tests.lane_oracle import FunctionSource

    rest = np.linspace(0.0, -4.0, 31, dtype=np.float32)
    source = FunctionSource(lambda history: np.concatenate([[3000.0], rest, [-8.0]]), vocab_size=33)
    spec = LaneSpec("banned top", do_sample=True, bad_words_ids=((0,),), top_k=5, temperature=0.9, seed=4)
    trace = Engine(source, FakeTokenizer(), eos_token_ids=[32]).run(PROMPT, [spec], max_new_tokens=3)
    lane = trace.lanes[0]
    assert lane.error is None and len(lane.steps) == 3
    chain = build_processors(spec.to_config(), len(PROMPT.ids), [32])
    for step, record in enumerate(lane.steps):
        raw = source.logits_for([*PROMPT.ids, *lane.token_ids[:step]])
        ban, *others = record.stages
        assert ban.kept == 32 and ban.mass == 0.0 and 0.0 < ban.prob < 1.0 and record.token_id != 0
        expected = softmax64(np.where(np.arange(33) == 0, -np.inf, raw))[record.token_id]
        assert ban.prob == pytest.approx(expected, rel=1e-5)
        want = reference_stages(chain, [*PROMPT.ids, *lane.token_ids[:step]], raw, record.token_id)
        for got, reference in zip(others, want[1:], strict=True):
            assert (got.kept, got.rank) == reference[1:4:2] and got.mass == pytest.approx(reference[2], rel=1e-5)
