"""Divergence, near-tie, close-draw and forced-branch analysis on hand-built traces with known answers."""

from __future__ import annotations

import pytest

from decoding.analysis.analysis import analyze, close_draws, first_divergence, near_ties
from decoding.records.trace import LaneTrace, ModelInfo, PromptInfo, RunSettings, RunTrace, StepRecord, TokenProb


def record(step, token, top, top_raw=None, draw=None, low=None, high=None, forced=False) -> StepRecord:
    """A StepRecord from top lists of (id, prob); margins follow from them."""
    top_raw = top_raw or top
    entries = [TokenProb(i, f"t{i}", p, r) for r, (i, p) in enumerate(top)]
    raw_entries = [TokenProb(i, f"t{i}", p, r) for r, (i, p) in enumerate(top_raw)]

    def margin(items):
        return items[0][1] - (items[1][1] if len(items) > 1 else 0.0)

    prob = dict(top).get(token, 0.0)
    return StepRecord(
        step=step,
        token_id=token,
        token_text=f"t{token}",
        prob=prob,
        prob_raw=dict(top_raw)[token],
        logprob=0.0,
        logprob_raw=0.0,
        entropy=0.0,
        entropy_raw=0.0,
        margin=margin(top),
        margin_raw=margin(top_raw),
        kept=len(top),
        tail_mass=0.0,
        tail_mass_raw=0.0,
        top=entries,
        top_raw=raw_entries,
        draw=draw,
        draw_low=low,
        draw_high=high,
        forced=forced,
    )


def lane(name, tokens, steps=None, branch=None) -> LaneTrace:
    steps = steps or [record(i, t, [(t, 0.9), (t + 1, 0.1)]) for i, t in enumerate(tokens)]
    return LaneTrace(name=name, config={}, processors=[], token_ids=list(tokens), steps=steps, branch=branch)


def trace_of(*lanes, threshold=0.05) -> RunTrace:
    return RunTrace(
        model=ModelInfo("m"),
        provider="cpu",
        prompt=PromptInfo("p", [1]),
        lanes=list(lanes),
        settings=RunSettings(near_tie_threshold=threshold),
    )


def test_first_divergence_for_every_pair():
    a = lane("a", [5, 6, 7, 8])
    b = lane("b", [5, 6, 9, 8])
    c = lane("c", [4, 6, 7, 8])
    d = lane("d", [5, 6])  # a prefix of a: no divergence over the common length
    result = analyze(trace_of(a, b, c, d))
    found = {(x.a, x.b): (x.step, x.token_a, x.token_b) for x in result.divergences}
    assert found == {
        ("a", "b"): (2, 7, 9),
        ("a", "c"): (0, 5, 4),
        ("a", "d"): (None, None, None),
        ("b", "c"): (0, 5, 4),
        ("b", "d"): (None, None, None),
        ("c", "d"): (0, 4, 5),
    }
    assert first_divergence(a, a).step is None


def test_near_ties_raw_and_processed_against_the_threshold():
    steps = [
        record(0, 1, [(1, 0.50), (2, 0.48)]),  # processed margin 0.02: tie
        record(1, 1, [(1, 0.9), (2, 0.1)], top_raw=[(1, 0.41), (2, 0.40)]),  # raw tie only
        record(2, 3, [(3, 0.6), (4, 0.4)]),  # margin 0.2: no tie
        record(3, 3, [(3, 1.0)], top_raw=[(3, 0.7), (4, 0.3)]),  # top-k 1: no runner-up, raw margin 0.4
        record(
            4, 5, [(5, 0.52), (6, 0.47)]
        ),  # margin 0.05 is not below the threshold
    ]
    ties = near_ties(lane("x", [1, 1, 3, 3, 5], steps), threshold=0.05)
    assert [(t.step, t.processed, t.raw, t.top1, t.top2) for t in ties] == [
        (0, True, True, 1, 2),
        (1, False, True, 1, 2),
    ]
    wider = near_ties(lane("x", [1, 1, 3, 3, 5], steps), threshold=0.25)
    assert [t.step for t in wider] == [0, 1, 2, 4]


def test_close_draws_name_the_nearer_edge_and_the_token_beyond_it():
    top = [(10, 0.5), (11, 0.3), (12, 0.2)]
    steps = [
        record(0, 11, top, draw=0.51, low=0.5, high=0.8),  # just above token 10's interval
        record(1, 11, top, draw=0.79, low=0.5, high=0.8),  # just below token 12's interval
        record(2, 10, top, draw=0.05, low=0.0, high=0.5),  # nearer the bottom edge: no token below
        record(3, 10, top, forced=True),  # forced steps draw nothing
    ]
    draws = close_draws(lane("s", [11, 11, 10, 10], steps))
    assert [(d.step, d.side, d.other_token) for d in draws] == [
        (0, "low", 10),
        (1, "high", 12),
        (2, "low", None),
    ]
    assert draws[0].distance == pytest.approx(0.01)
    assert draws[1].distance == pytest.approx(0.01)


def test_forced_branches_and_forced_steps():
    parent = lane("greedy", [1, 2, 3])
    steps = [
        record(0, 1, [(1, 0.9), (2, 0.1)]),
        record(1, 7, [(2, 0.9), (7, 0.1)], forced=True),
        record(2, 4, [(4, 0.9), (5, 0.1)], forced=True),
    ]
    child = lane("branch", [1, 7, 4], steps, branch={"parent": "greedy", "step": 1, "token_id": 7})
    result = analyze(trace_of(parent, child))
    assert [(f.lane, f.parent, f.step, f.token_id) for f in result.forced] == [
        ("branch", "greedy", 1, 7),
        ("branch", None, 2, 4),
    ]
    assert result.divergences[0].step == 1


def test_threshold_is_validated():
    with pytest.raises(ValueError, match="near_tie_threshold"):
        analyze(trace_of(lane("a", [1])), near_tie_threshold=1.5)
