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


def test_marks_follow_the_model(lane_map):
    model = lane_map.state
    marks = lane_map.marks()
    divergences = [(row, model.divergence_step(row)) for row in range(len(model.lanes))
                   if model.divergence_step(row) is not None]
    assert sorted(marks["divergence"]) == sorted(divergences) and divergences
    ties = [(row, step) for row in range(len(model.lanes)) for step, m in enumerate(model.marks(row)) if m.critical]
    assert sorted(marks["critical"]) == sorted(ties)


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
