"""Qt-free chart helpers: rows, cut-offs, timeline metrics, beam tree layout."""

from __future__ import annotations

import pytest

from decoding.records.trace import TokenProb
from gui.present.chart_rows import (
    BeamNode,
    beam_node_token,
    beam_nodes,
    best_path,
    display_token,
    inspector_rows,
    metric_values,
    step_cutoffs,
    step_summary,
)
from gui.present.lane_html import TokenMarks
from tests import chart_samples as samples


def test_display_token_makes_whitespace_visible_and_shortens():
    assert display_token(" Paris") == "·Paris"
    assert display_token("\n\t") == "↵→"
    assert display_token("") == "∅"
    assert display_token("abcdefghijklmnopqrstuvwxyz", 8) == "abcdefg…"
    assert display_token("我虽然很累") == "我虽然很累"


def test_rows_follow_processed_order_then_raw_only_tokens():
    lane = samples.sampled_lane(samples.EN_CANDIDATES)
    step = lane.steps[0]
    rows = inspector_rows(step, max_rows=8)
    assert [r.text for r in rows] == [t for t, _ in samples.EN_CANDIDATES[:8]]
    assert [r.chosen for r in rows] == [False, True] + [False] * 6
    assert rows[0].prob == pytest.approx(step.top[0].prob)
    assert rows[5].prob == 0.0 and rows[5].prob_raw == pytest.approx(0.04)  # filtered: raw bar only


def test_processed_reordering_and_forced_token_outside_top_n():
    step = samples.make_step(0, samples.EN_CANDIDATES[:6], 2, {})
    # A repetition penalty moved " the" to the front of the processed list.
    step.top = [
        TokenProb(1002, " the", 0.5, 0),
        TokenProb(1000, " Paris", 0.3, 1),
        TokenProb(1001, " a", 0.2, 2),
    ]
    assert [r.token_id for r in inspector_rows(step, 4)] == [1002, 1000, 1001, 1003]
    step.token_id, step.token_text, step.prob, step.prob_raw = 4242, " zebra", 0.0, 1e-6
    rows = inspector_rows(step, 4)
    assert [r.token_id for r in rows] == [1002, 1000, 1001, 4242]
    assert rows[-1].chosen and rows[-1].prob_raw == 1e-6


def test_cutoffs_of_a_top_k_top_p_step():
    lane = samples.sampled_lane(samples.EN_CANDIDATES)  # top_k=5, top_p=0.8 -> 3 kept
    step = lane.steps[0]
    rows = inspector_rows(step, 20)
    cut = step_cutoffs(step, rows, lane.config, lane.processors)
    assert (cut.kept_boundary, cut.top_k, cut.top_k_boundary, cut.top_p) == (3, 5, 5, 0.8)
    assert cut.min_p is None and cut.min_p_threshold is None
    # top-p compares the top-k set renormalised: it crosses 0.8 at the third row, where the kept line is.
    assert len(cut.cumulative_raw) == 5
    assert cut.cumulative_raw[1] < 0.8 <= cut.cumulative_raw[2]
    low, high = cut.intervals[1]
    assert (low, high) == (step.draw_low, step.draw_high) and low <= step.draw < high


def test_top_p_view_is_plain_raw_when_top_p_ran_first():
    lane = samples.sampled_lane(samples.EN_CANDIDATES)
    step = lane.steps[0]
    rows = inspector_rows(step, 20)
    cut = step_cutoffs(step, rows, lane.config, ["top_p", "top_k"])
    assert len(cut.cumulative_raw) == 20
    assert cut.cumulative_raw[0] == pytest.approx(0.46)


def test_min_p_threshold_reads_off_processed_top_probability():
    lane = samples.min_p_lane(samples.ZH_CANDIDATES)
    step = lane.steps[0]
    rows = inspector_rows(step, 20)
    cut = step_cutoffs(step, rows, lane.config, lane.processors)
    assert cut.min_p_threshold == pytest.approx(0.05 * step.top[0].prob)
    kept = [r for r in rows if r.prob]
    assert len(kept) == step.kept == cut.kept_boundary
    assert all(r.prob >= cut.min_p_threshold for r in kept)
    assert cut.top_k is None and cut.top_p is None


def test_summary_flags_forced_and_branch_point():
    lane = samples.sampled_lane(samples.EN_CANDIDATES)
    lane.branch = {"parent": "greedy", "step": 0, "token_id": 1001}
    lane.steps[0].forced = True
    summary = dict(step_summary(lane, lane.steps[0]))
    assert summary["flags"] == "↳ branch point, ★ forced"  # the legend's glyphs and words
    marked = dict(step_summary(lane, lane.steps[0], TokenMarks(critical=True, divergence=True)))
    assert marked["flags"].startswith("▲ critical point, ◆ first divergence from the reference")
    assert summary["kept set"] == "3 tokens"
    assert summary["draw u"].startswith(f"{lane.steps[0].draw:.4f} in [")


def test_a_varentropy_without_its_raw_value_is_shown_alone():
    """A run file may hold one without the other (the run-file fuzz found one that opened and broke the panel)."""
    lane = samples.sampled_lane(samples.EN_CANDIDATES)
    lane.steps[0].varentropy, lane.steps[0].varentropy_raw = 1.25, None
    assert dict(step_summary(lane, lane.steps[0]))["varentropy"].startswith("1.250 ")
    lane.steps[0].varentropy_raw = 1.5
    assert "(raw 1.500)" in dict(step_summary(lane, lane.steps[0]))["varentropy"]


def test_metric_values_and_unknown_metric():
    lanes = samples.timeline_lanes(samples.EN_CANDIDATES, steps=3)
    assert metric_values(lanes[0].steps, "entropy_raw") == [s.entropy_raw for s in lanes[0].steps]
    with pytest.raises(ValueError, match="metric='perplexity'"):
        metric_values(lanes[0].steps, "perplexity")


def test_beam_layout_and_best_path():
    lane = samples.beam_lane(samples.EN_BEAM_WORDS)
    nodes = beam_nodes(lane)
    assert len(nodes) == 4 * len(samples.EN_BEAM_WORDS)
    last = [n for n in nodes if n.step == 3]
    assert [n.kind for n in last] == ["kept", "finished", "pruned", "pruned"]
    assert [n.slot for n in last] == [0, 1, 2, 3]
    assert all(n.parent_slot == 0 for n in nodes if n.step == 0)  # step 0 hangs off the prompt root
    path = best_path(lane, nodes)
    assert [(n.step, n.slot) for n in path] == [(0, 0), (1, 0), (2, 0), (3, 0)]


def test_best_path_ends_on_the_finished_hypothesis():
    lane = samples.beam_lane(samples.EN_BEAM_WORDS)
    # The returned best sequence is beam 1's, which finished at the last step.
    lane.token_ids = [2001, 2011, 2021, 2031]
    path = best_path(lane, beam_nodes(lane))
    assert [(n.step, n.slot, n.kind) for n in path] == [
        (0, 1, "kept"),
        (1, 1, "kept"),
        (2, 1, "kept"),
        (3, 1, "finished"),
    ]


def test_only_the_processors_a_lane_applies_get_cutoffs():
    lane = samples.sampled_lane(samples.EN_CANDIDATES)
    step = lane.steps[0]
    rows = inspector_rows(step, 20)
    greedy = step_cutoffs(step, rows, {"do_sample": False, "top_k": 5, "top_p": 0.8}, processors=[])
    assert (greedy.top_k, greedy.top_p, greedy.min_p) == (None, None, None)
    only_p = step_cutoffs(step, rows, lane.config, processors=["top_p"])
    assert only_p.top_k is None and only_p.top_p == 0.8 and len(only_p.cumulative_raw) == 20


def test_a_beam_node_completing_a_character_reads_as_it():
    # 虽 is e8 99 bd: a node whose beam spelled e8 99 the step before reads 虽, not ‹bd›; a node after another
    # beam's plain piece keeps its bytes
    nodes = [BeamNode(0, 0, 0, 11, "\\xe8\\x99", -0.1, "kept"), BeamNode(0, 1, 0, 12, " a", -0.2, "kept"),
             BeamNode(1, 0, 0, 13, "\\xbd", -0.3, "kept"), BeamNode(1, 1, 1, 13, "\\xbd", -0.4, "pruned")]
    kept_at = {(n.step, n.slot): n for n in nodes if n.kind == "kept"}
    assert beam_node_token(nodes[2], kept_at, 9) == "虽"
    assert beam_node_token(nodes[3], kept_at, 9) == display_token("\\xbd", 9) != "虽"
    assert beam_node_token(nodes[1], kept_at, 9) == "·a"
