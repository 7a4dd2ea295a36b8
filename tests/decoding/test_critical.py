"""Critical points on hand-made distributions: records built the way the engine builds them (step_stats over
the scores, the draw by inverse CDF from a given u)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from decoding.analysis.analysis import analyze, near_ties
from decoding.analysis.critical import critical_point
from decoding.chain.selectors import draw_with
from decoding.records.stats import step_stats
from decoding.records.trace import CriticalSettings, LaneTrace, ModelInfo, PromptInfo, RunSettings, RunTrace, StepRecord

SETTINGS = CriticalSettings()  # draw_distance 0.02, ratio 0.8, min_prob 0.1


def scores_of(probs: list[float]) -> np.ndarray:
    return np.log(np.asarray(probs, dtype=np.float64)).astype(np.float32)


def greedy_record(probs: list[float], step: int = 0) -> StepRecord:
    scores = scores_of(probs)
    token = int(np.argmax(scores))
    return StepRecord(step=step, token_id=token, token_text="", **step_stats(scores, scores, token).record_fields())


def sampled_record(probs: list[float], u: float, step: int = 0) -> StepRecord:
    scores = scores_of(probs)
    draw = draw_with(u, scores)
    fields = step_stats(scores, scores, draw.token_id).record_fields()
    return StepRecord(step=step, token_id=draw.token_id, token_text="", draw=u, draw_low=draw.low,
                      draw_high=draw.high, **fields)


FLAT = [1 / 1000] * 1000


def test_a_flat_distribution_has_no_critical_point_though_every_margin_is_tiny():
    sampled = sampled_record(FLAT, u=0.5004)  # 0.0004 from an edge, but the neighbour holds 0.001
    greedy = greedy_record(FLAT)  # p2 / p1 = 1, but p1 = 0.001
    assert critical_point(sampled, SETTINGS) is None
    assert critical_point(greedy, SETTINGS) is None
    lane = LaneTrace("hot", {}, [], steps=[sampled, greedy])
    assert len(near_ties(lane, 0.05)) == 2  # the old margin test marks both


def test_two_strong_near_equal_candidates_are_marked():
    point = critical_point(greedy_record([0.45, 0.44, 0.11]), SETTINGS)
    assert (point.kind, point.token_id, point.runner_up) == ("tie", 0, 1)
    assert point.ratio == pytest.approx(0.44 / 0.45, rel=1e-5) and point.distance is None
    assert point.prob == pytest.approx(0.45, rel=1e-5) and point.prob_runner_up == pytest.approx(0.44, rel=1e-5)
    assert critical_point(greedy_record([0.6, 0.3, 0.1]), SETTINGS) is None  # p2 / p1 = 0.5


def test_a_draw_near_a_boundary_is_marked_with_the_token_across_it():
    probs = [0.5, 0.3, 0.2]  # intervals [0, 0.5), [0.5, 0.8), [0.8, 1)
    low = critical_point(sampled_record(probs, u=0.51), SETTINGS)
    assert (low.kind, low.token_id, low.runner_up) == ("draw", 1, 0)
    assert low.distance == pytest.approx(0.01, abs=1e-6) and low.ratio is None
    high = critical_point(sampled_record(probs, u=0.79), SETTINGS)
    assert (high.token_id, high.runner_up) == (1, 2) and high.prob_runner_up == pytest.approx(0.2, rel=1e-5)
    assert critical_point(sampled_record(probs, u=0.65), SETTINGS) is None  # 0.15 from either edge


def test_a_draw_near_a_boundary_with_a_negligible_neighbour_is_not_marked():
    probs = [0.9, 0.095, 0.005]  # token 1 holds [0.9, 0.995); token 2 beyond it holds 0.005
    record = sampled_record(probs, u=0.994)
    assert record.token_id == 1 and record.draw_high - record.draw < 0.002
    assert critical_point(record, SETTINGS) is None
    assert critical_point(record, CriticalSettings(min_prob=0.001)).runner_up == 2


def test_forced_steps_and_a_tie_the_chosen_token_is_not_in_are_not_marked():
    forced = greedy_record([0.45, 0.44, 0.11])
    forced.forced = True
    assert critical_point(forced, SETTINGS) is None
    beam_third = greedy_record([0.45, 0.44, 0.11])
    beam_third.token_id = 2  # a beam's best path may take a token outside the top two
    assert critical_point(beam_third, SETTINGS) is None
    beam_second = greedy_record([0.45, 0.44, 0.11])
    beam_second.token_id = 1
    assert critical_point(beam_second, SETTINGS).runner_up == 0


def test_the_analysis_uses_the_run_settings_thresholds():
    lane = LaneTrace("greedy", {}, [], token_ids=[0, 0], steps=[greedy_record([0.45, 0.44, 0.11], 0),
                                                           greedy_record([0.5, 0.35, 0.15], 1)])
    trace = RunTrace(ModelInfo("m"), "cpu", PromptInfo("p", [1]), lanes=[lane])
    assert [p.step for p in analyze(trace).critical_points["greedy"]] == [0]
    trace.settings = RunSettings(critical=CriticalSettings(ratio=0.6))
    assert [p.step for p in analyze(trace).critical_points["greedy"]] == [0, 1]


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("draw_distance", 0.6, r"\[0, 0.5\]"),
        ("draw_distance", -0.01, r"\[0, 0.5\]"),
        ("ratio", 0.0, r"\(0, 1\]"),
        ("ratio", 1.5, r"\(0, 1\]"),
        ("min_prob", math.nan, r"\[0, 1\]"),
        ("min_prob", True, r"\[0, 1\]"),
    ],
)
def test_thresholds_are_validated_with_their_range(field, value, allowed):
    with pytest.raises(ValueError, match=f"invalid critical {field}=.*allowed a float in {allowed}"):
        CriticalSettings(**{field: value})
