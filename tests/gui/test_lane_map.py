"""The lane × step map on hand-built traces: every cell's value and colour come from its record, the marks sit
where the model says, hover names the token, a click selects the step everywhere."""

from __future__ import annotations

import math

import pytest
from PySide6.QtCore import Qt

from gui.present.lane_html import probability_colour
from gui.state.run_state import Selection
from gui.views.lane_map import METRICS, LaneStepMap, colour_map
from gui.views.redraw import RedrawScheduler
from tests import chart_samples as samples


@pytest.fixture
def lane_map(qtbot):
    lanes = samples.timeline_lanes(samples.EN_CANDIDATES, steps=9)
    lanes[2].steps = lanes[2].steps[:5]  # a lane that ended early: its later cells stay empty
    lanes[2].token_ids = lanes[2].token_ids[:5]
    widget = LaneStepMap(samples.model_of(lanes), RedrawScheduler())
    qtbot.addWidget(widget)
    widget.resize(800, 300)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def test_cells_are_the_records_values_in_the_metrics_colours(lane_map):
    model = lane_map.state
    for row, lane in enumerate(model.lanes):
        for step in range(9):
            if step < len(lane.trace.steps):
                record = lane.trace.steps[step]
                assert lane_map.cell_value(row, step) == pytest.approx(record.prob)
                want = colour_map("prob").map(record.prob, mode="qcolor").name()
                assert lane_map.cell_colour(row, step) == want
            else:
                assert math.isnan(lane_map.cell_value(row, step))
    low, high = probability_colour(0.0), probability_colour(1.0)
    assert colour_map("prob").map(0.0, mode="qcolor").name() == low  # the text's own scale
    assert colour_map("prob").map(1.0, mode="qcolor").name() == high
    lane_map.set_metric("entropy")
    record = model.lanes[1].trace.steps[3]
    assert lane_map.cell_value(1, 3) == pytest.approx(record.entropy)


def first_difference(a: list[int], b: list[int]) -> int | None:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)


def is_critical(record, settings) -> bool:
    """The critical-point rule as CriticalSettings states it, written out here: a draw within draw_distance of
    its interval's edge to a neighbour of probability >= min_prob; a top two with p2 / p1 >= ratio, p1 >= min_prob,
    the chosen token one of them."""
    top = record.top
    if record.draw is not None:
        rank = list(top.ids).index(record.token_id)
        below = rank > 0 and record.draw - record.draw_low <= settings.draw_distance
        above = rank + 1 < len(top) and record.draw_high - record.draw <= settings.draw_distance
        return ((below and top.probs[rank - 1] >= settings.min_prob)
                or (above and top.probs[rank + 1] >= settings.min_prob))
    return (record.token_id in top.ids[:2] and top.probs[0] >= settings.min_prob
            and top.probs[1] / top.probs[0] >= settings.ratio)


def test_marks_follow_the_model(lane_map):
    """Divergences against the reference lane (the first) and critical points, worked out from the lanes' tokens
    and records by the rules themselves."""
    lanes = [lane.trace for lane in lane_map.state.lanes]
    divergences = [(row, first_difference(lane.token_ids, lanes[0].token_ids)) for row, lane in enumerate(lanes)]
    divergences = [(row, step) for row, step in divergences[1:] if step is not None]
    settings = lane_map.state.critical
    critical = [(row, record.step) for row, lane in enumerate(lanes) for record in lane.steps
                if is_critical(record, settings)]
    marks = lane_map.marks()
    assert sorted(marks["divergence"]) == sorted(divergences) and divergences
    assert sorted(marks["critical"]) == sorted(critical) and critical


def test_click_selects_the_cells_step_and_hover_names_its_token(qtbot, lane_map):
    seen = []
    lane_map.state.events.connect("selection_changed", seen.append)
    view = lane_map._view
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.mapFromScene(lane_map.scene_pos_of(1, 6)))
    assert seen == [Selection(1, 6)]
    lane_map._on_hover(lane_map.scene_pos_of(0, 2))
    record = lane_map.state.lanes[0].trace.steps[2]
    assert lane_map._hover.text().startswith(f"{lane_map.state.lanes[0].name} · step 2 · “")
    assert f"{METRICS['prob'][0]} = {record.prob:.4f}" in lane_map._hover.text()
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.mapFromScene(lane_map.scene_pos_of(2, 7)))
    assert seen == [Selection(1, 6)]  # an empty cell selects nothing
