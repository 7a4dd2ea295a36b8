"""The batched lane engine on a pure-numpy fake source (fast): batching independence, one call per step,
seeded lanes, branching, forcing, cancellation, source errors, streaming."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from decoding.chain.selectors import WIDER_PREFIX
from decoding.chain.spec import Branch, LaneSpec, assign_seeds, default_lanes
from decoding.engine.engine import Engine, Prefix, branch_prefix
from decoding.engine.lane_state import BeamLaneState, LaneState, SingleRowLaneState
from decoding.engine.protocol import PositionLimit, RowSummarizer
from decoding.records.trace import PromptInfo
from tests.fake_source import FakeSource, FakeTokenizer, SummarizingSource

PROMPT = PromptInfo("fake prompt", [1, 17, 29, 5])
SIX_LANES = [
    LaneSpec("greedy"),
    LaneSpec("beam-4", num_beams=4),
    LaneSpec("top-k", do_sample=True, top_k=10, seed=1),
    LaneSpec("top-p", do_sample=True, top_p=0.9, seed=2),
    LaneSpec("hot", do_sample=True, temperature=1.3, seed=3),
    LaneSpec("min-p", do_sample=True, min_p=0.05, seed=4),
]


def make_engine(eos=(), vocab=64, **kwargs) -> tuple[Engine, FakeSource]:
    source = FakeSource(vocab_size=vocab, **kwargs)
    return Engine(source, FakeTokenizer(), eos_token_ids=list(eos)), source


def run_tokens(specs, max_new_tokens=12, eos=(), **kwargs):
    engine, _ = make_engine(eos)
    trace = engine.run(PROMPT, specs, max_new_tokens=max_new_tokens, **kwargs)
    return {lane.name: lane.token_ids for lane in trace.lanes}


def test_greedy_in_a_six_lane_batch_equals_greedy_alone():
    alone = run_tokens([LaneSpec("greedy")])
    batched = run_tokens(SIX_LANES)
    assert batched["greedy"] == alone["greedy"]
    assert len(alone["greedy"]) == 12


@pytest.mark.parametrize("specs", [[LaneSpec("greedy")], SIX_LANES, SIX_LANES + [LaneSpec("beam-2", num_beams=2)]])
def test_one_prefill_and_exactly_one_source_step_per_step(specs):
    engine, source = make_engine()
    engine.run(PROMPT, specs, max_new_tokens=10)
    assert source.prefill_calls == 1
    assert source.step_calls == 9  # the 10th token needs no further logits
    rows = sum(spec.num_beams for spec in specs)
    assert all(1 <= size <= rows for size in source.batch_sizes)  # identical rows are computed once


def test_identical_rows_are_computed_once():
    engine, source = make_engine()
    trace = engine.run(PROMPT, [LaneSpec("a"), LaneSpec("b"), LaneSpec("c", forced={3: 5})], max_new_tokens=8)
    a, b, c = (lane.token_ids for lane in trace.lanes)
    assert a == b and c[:3] == a[:3] and c[3] == 5
    assert source.batch_sizes == [1, 1, 1] + [2] * 4  # "a" and "b" share one row; "c" parts at step 3


def test_seeded_lane_is_independent_of_the_lane_mix():
    lane = LaneSpec("top-p", do_sample=True, top_p=0.9, seed=2)
    alone = run_tokens([lane])["top-p"]
    mixed = run_tokens(SIX_LANES)["top-p"]
    reordered = run_tokens([SIX_LANES[4], lane, SIX_LANES[1]])["top-p"]
    assert alone == mixed == reordered
    other_seed = run_tokens([lane.with_changes(seed=99)])["top-p"]
    assert other_seed != alone


def test_finished_lanes_drop_their_rows():
    engine, source = make_engine(eos=[7])
    trace = engine.run(
        PROMPT,
        [LaneSpec("greedy"), LaneSpec("short", do_sample=True, seed=5, max_new_tokens=3)],
        max_new_tokens=8,
    )
    short = trace.lane("short")
    assert len(short.token_ids) <= 3
    assert source.batch_sizes[0] == 2
    assert source.batch_sizes[-1] == 1


def test_eos_stops_a_lane_and_is_kept():
    engine, _ = make_engine()
    first = engine.run(PROMPT, [LaneSpec("greedy")], max_new_tokens=6).lanes[0].token_ids
    eos = first[3]
    engine, _ = make_engine(eos=[eos])
    lane = engine.run(PROMPT, [LaneSpec("greedy")], max_new_tokens=6).lanes[0]
    assert lane.finish_reason == "eos"
    assert lane.token_ids == first[: first.index(eos) + 1]


def test_stop_string_stops_a_lane():
    engine, _ = make_engine()
    first = engine.run(PROMPT, [LaneSpec("greedy")], max_new_tokens=6).lanes[0].token_ids
    stop = f"<{first[2]}>"
    lane = engine.run(PROMPT, [LaneSpec("greedy", stop_strings=(stop,))], max_new_tokens=6).lanes[0]
    assert lane.finish_reason == "stop_string"
    assert lane.token_ids == first[: first.index(first[2]) + 1]


def test_branch_copies_the_parent_then_takes_the_token():
    parent = LaneSpec("sampled", do_sample=True, top_k=20, seed=11)
    engine, source = make_engine()
    alone = engine.run(PROMPT, [parent], max_new_tokens=10).lanes[0].token_ids
    token = (alone[4] + 1) % 64
    branch = LaneSpec("branch", branch=Branch("sampled", 4, token))
    engine, source = make_engine()
    trace = engine.run(PROMPT, [parent, branch], max_new_tokens=10)
    got = trace.lane("branch")
    assert trace.lane("sampled").token_ids == alone  # the parent is untouched by its branch
    assert got.token_ids[:4] == alone[:4]
    assert got.token_ids[4] == token
    assert got.steps[4].forced and not got.steps[3].forced
    assert [s.token_id for s in got.steps] == got.token_ids
    assert source.prefill_calls == 1 and source.step_calls == 9
    assert source.batch_sizes[:4] == [1, 1, 1, 1] and source.batch_sizes[4:] == [2] * 5  # forked, not recomputed
    expected_tail = FakeSource(64).logits_for(PROMPT.ids + got.token_ids[:5]).argmax()
    assert got.token_ids[5] == expected_tail  # greedy continuation of the forked row


def test_branch_after_a_run_with_a_prefix_matches_the_in_run_branch():
    parent = LaneSpec("greedy")
    branch = LaneSpec("branch", do_sample=True, top_p=0.8, seed=3, branch=Branch("greedy", 3, 9))
    engine, _ = make_engine()
    in_run = engine.run(PROMPT, [parent, branch], max_new_tokens=10).lane("branch")
    finished = engine.run(PROMPT, [parent], max_new_tokens=10)
    engine, source = make_engine()
    after = engine.run(PROMPT, [branch], max_new_tokens=10, prefix=branch_prefix(finished, "greedy", 3))
    assert after.lanes[0].token_ids == in_run.token_ids
    assert source.prefill_calls == 1 and source.step_calls == 6  # steps 3..9 only: the prefix was prefilled


def test_branch_whose_parent_ends_first_reports_an_error():
    engine, _ = make_engine()
    tokens = engine.run(PROMPT, [LaneSpec("greedy")], max_new_tokens=8).lanes[0].token_ids
    engine, _ = make_engine(eos=[tokens[1]])
    trace = engine.run(PROMPT, [LaneSpec("greedy"), LaneSpec("b", branch=Branch("greedy", 5, 3))], max_new_tokens=8)
    lane = trace.lane("b")
    assert lane.finish_reason == "error" and "before the branch step" in lane.error


def test_forcing_a_token_at_a_step_for_all_lanes():
    specs = [spec.with_changes(forced={2: 42}) for spec in SIX_LANES]
    engine, _ = make_engine()
    trace = engine.run(PROMPT, specs, max_new_tokens=6)
    unforced = run_tokens(SIX_LANES, max_new_tokens=6)
    for lane in trace.lanes:
        assert lane.token_ids[2] == 42
        assert lane.steps[2].forced
        if lane.name == "greedy":
            assert lane.token_ids[:2] == unforced["greedy"][:2]


def test_cancel_mid_run_leaves_a_consistent_trace():
    engine, source = make_engine()
    cancel = threading.Event()
    run = engine.start(PROMPT, SIX_LANES, max_new_tokens=20, cancel=cancel)
    for lane_index, record in run:
        if record.step == 4 and lane_index == 0:
            cancel.set()
    trace = run.trace
    assert source.step_calls == 4
    for lane in trace.lanes:
        assert lane.finish_reason == "cancelled"
        assert [s.token_id for s in lane.steps] == lane.token_ids
        assert len(lane.token_ids) == 5
    assert trace.lane("beam-4").sequences and trace.analysis is not None


def test_source_error_ends_the_run_keeping_the_tokens():
    engine, source = make_engine(fail_at_step=5)
    trace = engine.run(PROMPT, SIX_LANES[:3], max_new_tokens=20)
    assert "device lost" in trace.error
    for lane in trace.lanes:
        assert lane.finish_reason == "error"
        assert len(lane.token_ids) == 5 == len(lane.steps)


def test_streaming_delivers_every_record_as_it_happens():
    engine, _ = make_engine()
    seen: list[tuple[int, int]] = []
    trace = engine.run(PROMPT, SIX_LANES, max_new_tokens=5, on_step=lambda i, r: seen.append((i, r.step)))
    assert len(seen) == 6 * 5
    assert [step for _, step in seen] == sorted(step for _, step in seen)  # step by step, all lanes each step
    assert trace.timing.steps == 4 and trace.timing.tokens == 9 * 4


def test_beam_lane_reports_its_best_sequence_and_every_hypothesis():
    engine, _ = make_engine(eos=[3])
    lane = engine.run(PROMPT, [LaneSpec("beam", num_beams=3, num_return_sequences=3)], max_new_tokens=8).lanes[0]
    assert lane.token_ids == lane.sequences[0]
    assert len(lane.sequences) == len(lane.sequence_scores) == 3
    assert lane.sequence_scores == sorted(lane.sequence_scores, reverse=True)
    assert [s.token_id for s in lane.steps] == lane.token_ids
    assert all(len(s.beams) == 6 for s in lane.steps)  # beams_to_keep = 2 * num_beams with one eos id
    alone = run_tokens([LaneSpec("beam", num_beams=3)], max_new_tokens=8, eos=[3])["beam"]
    mixed = run_tokens(SIX_LANES + [LaneSpec("beam", num_beams=3)], max_new_tokens=8, eos=[3])["beam"]
    assert alone == mixed == lane.token_ids


def test_step_records_carry_distributions_and_draws():
    engine, _ = make_engine()
    trace = engine.run(PROMPT, SIX_LANES, max_new_tokens=3)
    for lane in trace.lanes:
        for record in lane.steps:
            assert len(record.top_raw) == 20 and len(record.top) == min(20, record.kept)
            assert record.token_text == f"<{record.token_id}>"
            assert 0.0 < record.prob_raw <= 1.0 and record.time_ms > 0.0
    sampled = trace.lane("top-k").steps[0]
    assert sampled.draw_low <= sampled.draw < sampled.draw_high
    assert sampled.kept == 10
    assert trace.lane("greedy").steps[0].draw is None


def test_invalid_runs_are_refused_before_anything_runs():
    engine, source = make_engine()
    with pytest.raises(ValueError, match="max_new_tokens"):
        engine.start(PROMPT, [LaneSpec("greedy")], max_new_tokens=0)
    with pytest.raises(ValueError, match="prompt"):
        engine.start(PromptInfo("", []), [LaneSpec("greedy")], max_new_tokens=3)
    with pytest.raises(ValueError, match="distinct names"):
        engine.start(PROMPT, [LaneSpec("a"), LaneSpec("a")], max_new_tokens=3)
    with pytest.raises(ValueError, match="branch parent"):
        engine.start(PROMPT, [LaneSpec("b", branch=Branch("nobody", 2, 1))], max_new_tokens=3)
    with pytest.raises(ValueError, match="branch parent"):
        engine.start(
            PROMPT,
            [LaneSpec("beam", num_beams=2), LaneSpec("b", branch=Branch("beam", 1, 1))],
            max_new_tokens=3,
        )
    with pytest.raises(ValueError, match="top_n"):
        Engine(source, FakeTokenizer(), [], top_n=19)
    assert source.prefill_calls == 0


def test_default_lanes_run_together():
    engine, source = make_engine(eos=[2], vocab=128)
    trace = engine.run(PROMPT, assign_seeds(default_lanes(), 0), max_new_tokens=16)
    assert [lane.name for lane in trace.lanes] == ["greedy", "beam-4", "top-k 50", "top-p 0.9", "T 1.3"]
    assert source.prefill_calls == 1
    assert source.step_calls == max(len(lane.token_ids) for lane in trace.lanes) - 1  # one batched call a step
    for lane in trace.lanes:  # together, each lane gives what it gives alone: same tokens, same records
        alone_engine, _ = make_engine(eos=[2], vocab=128)
        spec = next(spec for spec in assign_seeds(default_lanes(), 0) if spec.name == lane.name)
        alone = alone_engine.run(PROMPT, [spec], max_new_tokens=16).lanes[0]
        assert (lane.token_ids, lane.finish_reason) == (alone.token_ids, alone.finish_reason), lane.name
        assert [(s.top, s.prob, s.draw) for s in lane.steps] == [(s.top, s.prob, s.draw) for s in alone.steps]


def test_prefix_needs_one_record_per_token():
    engine, _ = make_engine()
    with pytest.raises(ValueError, match="prefix"):
        engine.start(PROMPT, [LaneSpec("greedy")], max_new_tokens=5, prefix=Prefix([1, 2], []))


def test_every_record_is_decided_from_the_logits_of_its_own_history():
    """Through forks (a branch, a fan-out of rows), reorders (beams) and dropped rows, each single-row lane's
    step reads the logits row of exactly its prompt and tokens so far (the fake source's logits are a function
    of the whole history): its raw distribution is softmax(logits of that history)."""
    engine, source = make_engine(eos=[2], vocab=48)
    specs = [*SIX_LANES, LaneSpec("branch", branch=Branch("top-k", 3, 7), do_sample=True, seed=9)]
    trace = engine.run(PROMPT, specs, max_new_tokens=12)
    for lane in trace.lanes:
        if lane.sequences is not None:
            continue  # a beam lane's records follow its best final sequence, built from several rows
        for record in lane.steps:
            logits = source.logits_for([*PROMPT.ids, *lane.token_ids[: record.step]]).astype(np.float64)
            probs = np.exp(logits - logits.max())
            probs /= probs.sum()
            best = np.argsort(-probs, kind="stable")[: len(record.top_raw)]
            assert list(record.top_raw.ids) == best.tolist(), (lane.name, record.step)
            assert record.prob_raw == pytest.approx(probs[record.token_id], abs=1e-6), (lane.name, record.step)


class FailingPrefill(FakeSource):
    def prefill(self, prompt_ids, progress=None):
        raise RuntimeError("out of memory")


def test_prefill_failure_ends_every_lane_with_error():
    engine = Engine(FailingPrefill(32), FakeTokenizer(), [])
    trace = engine.run(PROMPT, SIX_LANES[:2], max_new_tokens=4)
    assert "out of memory" in trace.error
    assert [lane.finish_reason for lane in trace.lanes] == ["error", "error"]
    assert all(lane.token_ids == [] for lane in trace.lanes)


def test_beam_lane_can_branch_from_a_greedy_lane():
    engine, source = make_engine()
    specs = [LaneSpec("greedy"), LaneSpec("beam", num_beams=2, branch=Branch("greedy", 2, 11))]
    trace = engine.run(PROMPT, specs, max_new_tokens=8)
    greedy, beam = trace.lane("greedy").token_ids, trace.lane("beam").token_ids
    assert beam[:2] == greedy[:2] and beam[2] == 11 and len(beam) == 8
    assert all(seq[:3] == beam[:3] for seq in trace.lane("beam").sequences)
    # both beams take the forced token from the parent's row: one shared row at step 2, then two beams
    assert source.batch_sizes == [1, 1, 2] + [3] * 4


def test_unseeded_sampled_lanes_get_a_recorded_seed():
    engine, _ = make_engine()
    lane = LaneSpec("s", do_sample=True, top_k=5)
    first = engine.run(PROMPT, [lane], max_new_tokens=4, base_seed=9).lanes[0]
    again = engine.run(PROMPT, [lane], max_new_tokens=4, base_seed=9).lanes[0]
    assert first.config["seed"] == again.config["seed"] and first.token_ids == again.token_ids
    assert "seed" in engine.run(PROMPT, [lane], max_new_tokens=2).lanes[0].config


def test_a_source_row_summary_changes_no_token_and_no_statistic():
    specs = assign_seeds(SIX_LANES, 0)
    plain = Engine(FakeSource(vocab_size=64), FakeTokenizer(), eos_token_ids=[], top_n=24).run(
        PROMPT, specs, max_new_tokens=10
    )
    source = SummarizingSource(vocab_size=64)
    summarized = Engine(source, FakeTokenizer(), eos_token_ids=[], top_n=24).run(PROMPT, specs, max_new_tokens=10)
    # the top-N ids and a draw's wider prefix
    assert len(source.summaries) == 1 + source.step_calls and {k for _, k in source.summaries} == {WIDER_PREFIX}
    for want, got in zip(plain.lanes, summarized.lanes, strict=True):
        assert got.token_ids == want.token_ids, want.name
        for a, b in zip(want.steps, got.steps, strict=True):
            assert [t.id for t in b.top_raw] == [t.id for t in a.top_raw]
            assert (b.entropy_raw, b.prob_raw, b.prob) == pytest.approx((a.entropy_raw, a.prob_raw, a.prob), rel=1e-5)


def test_single_row_and_beam_lanes_are_siblings_over_one_abstract_lane():
    assert issubclass(SingleRowLaneState, LaneState) and issubclass(BeamLaneState, LaneState)
    assert not issubclass(BeamLaneState, SingleRowLaneState)
    assert LaneState.__abstractmethods__ == {"attach", "decide", "queue"}


def test_optional_source_capabilities_are_the_ones_a_source_declares():
    assert isinstance(SummarizingSource(vocab_size=32), RowSummarizer)
    assert not isinstance(FakeSource(32), RowSummarizer) and not isinstance(FakeSource(32), PositionLimit)
