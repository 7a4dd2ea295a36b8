"""decoding.analysis.compare: two runs that should be identical, compared lane by lane with the reason each difference
has (what the window shows when two runs of the same lanes disagree, e.g. on another thread count)."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from decoding.analysis.compare import compare_traces
from decoding.chain.spec import LaneSpec
from decoding.engine.engine import Engine
from decoding.records.trace import PromptInfo, TokenProb, TopList
from tests.fake_source import FakeSource, FakeTokenizer

SPECS = [LaneSpec("greedy"), LaneSpec("sample", do_sample=True, seed=5), LaneSpec("beam", num_beams=2)]


def run(specs=SPECS, prompt=(1, 17, 29, 5)):
    return Engine(FakeSource(), FakeTokenizer(), []).run(PromptInfo("p", list(prompt)), specs, max_new_tokens=8)


def test_two_runs_of_the_same_lanes_are_the_same():
    comparison = compare_traces(run(), run())
    assert comparison.same_tokens and comparison.lanes == [] and comparison.describe() == []


def test_probabilities_that_differ_in_their_last_digits_are_said_but_the_tokens_are_the_same():
    a, b = run(), run()
    step = b.lanes[0].steps[3]
    entries = list(step.top_raw)
    entries[1] = entries[1]._replace(prob=entries[1].prob + 2e-7)
    step.top_raw = TopList.of(entries)
    comparison = compare_traces(a, b)
    assert comparison.same_tokens
    (difference,) = comparison.lanes
    assert (difference.lane, difference.kind, difference.step) == ("greedy", "probabilities", None)
    assert difference.rounding == pytest.approx(2e-7)


def flip(lane, step: int, probs_a: tuple[float, float], probs_b: tuple[float, float], b_lane):
    """Make run a choose the top token and run b the runner-up at `step`, with these (top, runner-up) probs."""
    first, second = lane.steps[step].top_raw[:2]
    for record, (p1, p2), token in ((lane.steps[step], probs_a, first), (b_lane.steps[step], probs_b, second)):
        pair = [TokenProb(first.id, first.text, p1, 0), TokenProb(second.id, second.text, p2, 1)]
        record.top = record.top_raw = TopList.of(pair + list(record.top_raw)[2:])  # a greedy lane: one list
        record.token_id, record.token_text = token.id, token.text
    b_lane.token_ids[step] = second.id
    return first.id, second.id


def test_a_near_tie_that_rounding_decided_is_named_with_the_gap():
    a, b = run(), copy.deepcopy(run())
    top, runner_up = flip(a.lanes[0], 4, (0.3000002, 0.3), (0.2999999, 0.3000001), b.lanes[0])
    (difference,) = compare_traces(a, b).lanes
    assert (difference.kind, difference.step, difference.token_a, difference.token_b) == ("near_tie", 4, top,
                                                                                           runner_up)
    assert "a near-tie: the two were 2e-07 apart" in difference.describe()
    assert "(rounding decided)" in difference.describe()


def test_another_distribution_is_not_called_rounding():
    a, b = run(), copy.deepcopy(run())
    flip(a.lanes[0], 2, (0.5, 0.3), (0.3, 0.5), b.lanes[0])
    (difference,) = compare_traces(a, b).lanes
    assert difference.kind == "distribution" and "more than rounding" in difference.detail


def test_other_seeds_and_edges_of_a_draw():
    a = run()
    b = run([SPECS[0], replace(SPECS[1], seed=6), SPECS[2]])
    differences = {d.lane: d for d in compare_traces(a, b).lanes}
    assert differences["sample"].kind == "draw" and "seeds 5 and 6" in differences["sample"].detail
    assert "lane settings differ (sample)" in compare_traces(a, b).setup
    c = copy.deepcopy(a)
    record = c.lanes[1].steps[2]
    record.token_id, c.lanes[1].token_ids[2] = record.token_id + 1, record.token_id + 1  # the same u, another token
    (difference,) = compare_traces(a, c).lanes
    assert difference.kind == "near_edge" and f"u={record.draw:.6f}" in difference.detail


def test_lanes_in_one_run_only_and_another_prompt():
    a, b = run(), run(SPECS[:2], prompt=(1, 2, 3))
    comparison = compare_traces(a, b)
    assert comparison.setup == ["the prompts' token ids differ"] and not comparison.same_tokens
    assert [(d.lane, d.kind, d.detail) for d in comparison.lanes if d.kind == "missing"] == [
        ("beam", "missing", "only in the first run")]
