"""The temperature view on a hand-made sweep: the chosen token's line is its probability at each temperature,
the other lines the most likely other tokens; nothing is drawn before a sweep exists."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from decoding.records.trace import SweepPoint, TemperatureSweep, TokenProb
from gui.views.sweep_view import SweepView, sweep_lines
from tests import chart_samples as samples


def make_sweep(lane: str, step: int, chosen: int) -> TemperatureSweep:
    points = []
    for t in (0.0, 0.5, 1.0, 1.5, 2.0):
        p = 1.0 if t == 0 else 0.8 / (1 + t)
        top = [TokenProb(chosen, "a", p, 0), TokenProb(7, "b", (1 - p) * 0.7, 1), TokenProb(9, "c", (1 - p) * 0.3, 2)]
        points.append(SweepPoint(t, p, 0.5 + t, 1 + int(10 * t), p - top[1].prob, top))
    return TemperatureSweep(lane, step, chosen, points)


def test_lines_follow_the_chosen_token_and_the_strongest_others():
    sweep = make_sweep("x", 0, 5)
    lines = sweep_lines(sweep, count=2)
    assert list(lines) == [5, 7]
    assert lines[5][1] == pytest.approx([p.prob for p in sweep.points])
    assert lines[7][1][0] == pytest.approx(0.0) and lines[7][1][2] == pytest.approx((1 - 0.4) * 0.7)


def test_the_view_draws_the_selected_steps_sweep(qtbot):
    lanes = samples.timeline_lanes(samples.EN_CANDIDATES, steps=4)
    model = samples.model_of(lanes)
    view = SweepView(model)
    qtbot.addWidget(view)
    assert view.shown_sweep() is None
    model.select(1, 2)
    assert "no sweep yet" in view._title.text() and view._sweep_button.isEnabled()
    model.add_sweep(make_sweep(lanes[1].name, 2, lanes[1].steps[2].token_id))
    assert view.shown_sweep() is not None
    drawn = [item for plot, item in view._lines if plot is view._dist]
    chosen = drawn[0].getData()
    assert list(chosen[0]) == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert list(chosen[1]) == pytest.approx([p.prob for p in view.shown_sweep().points])
    assert "(chosen)" in view._legend.text()


def test_the_stacked_plots_show_the_same_temperatures(qtbot):
    # linked x axes line up only in equally wide plots: the entropy plot's kept-set axis on the right once cut
    # its temperatures short of the distribution plot's (2.0 there, ~1.9 below)
    lanes = samples.timeline_lanes(samples.EN_CANDIDATES, steps=4)
    model = samples.model_of(lanes)
    view = SweepView(model)
    qtbot.addWidget(view)
    view.resize(600, 500)
    view.show()
    qtbot.waitExposed(view)
    model.select(1, 2)
    model.add_sweep(make_sweep(lanes[1].name, 2, lanes[1].steps[2].token_id))
    qtbot.wait(50)
    assert view._dist.vb.width() == pytest.approx(view._stats.vb.width(), abs=1)
    assert view._dist.vb.viewRange()[0] == pytest.approx(view._stats.vb.viewRange()[0], abs=1e-3)


def test_fanouts_over_t_plot_how_far_apart_the_members_are(qtbot, window):
    """Click a sampled lane's token → "Fan-outs over T" → Run → Temperature view "diversity": the plot has the
    members' mean pairwise edit distance beside the distinct-continuation count, at every temperature."""
    from decoding.analysis.sweep import diversity_by_temperature
    from tests.gui_helpers import run_and_wait, token_point

    run_and_wait(qtbot, window, max_new_tokens=10)
    sampled = next(i for i, lane in enumerate(window.state.lanes) if lane.spec.do_sample and not lane.spec.is_beam)
    browser = window.text.columns[sampled].browser
    qtbot.mouseClick(browser.viewport(), Qt.MouseButton.LeftButton, pos=token_point(qtbot, window, sampled, 2))
    view = window.views["sweep"]
    window.charts.setCurrentWidget(view)
    qtbot.mouseClick(view._fanout_button, Qt.MouseButton.LeftButton)
    fanouts = [lane.name for lane in window.state.lanes if lane.fanout > 1]
    assert fanouts == ["T 0.3 ×8", "T 0.7 ×8", "T 1 ×8", "T 1.5 ×8"]
    run_and_wait(qtbot, window, max_new_tokens=10)
    view._mode.setCurrentIndex(1)
    qtbot.wait(20)
    points = diversity_by_temperature(window.state.shown_trace())
    lines = {item.name(): item.getData() for plot, item in view._lines if plot is view._diversity}
    xs, ys = lines["mean pairwise edit distance (tokens)"]
    assert list(xs) == [0.3, 0.7, 1.0, 1.5]
    assert list(ys) == pytest.approx([p.mean_edit_distance for p in points])
    assert all(0 < y <= 10 for y in ys)  # tokens apart, at most the run's length
    assert list(lines["distinct continuations"][1]) == [p.distinct_continuations for p in points]
    assert "how many tokens two members' texts differ by" in view._title.text()
