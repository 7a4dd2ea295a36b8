"""Chart widgets with real clicks and keys (pytest-qt, offscreen) on hand-built traces."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QMenu

from decoding.analysis.critical import critical_point
from gui.state.run_state import Selection
from gui.state.tasks.run import RunTask
from gui.views import style
from gui.views.beam_tree import BeamTreeView
from gui.views.inspector import StepInspector
from gui.views.redraw import RedrawScheduler
from gui.views.timeline import Timeline
from tests import chart_samples as samples
from tests.gui_helpers import colour_counts


def _shown(qtbot, widget, width=700, height=620):
    qtbot.addWidget(widget)
    widget.resize(width, height)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def _click(qtbot, view, scene_pos: QPointF, button=Qt.MouseButton.LeftButton):
    """A real mouse click on a pyqtgraph view at a scene position."""
    qtbot.mouseClick(view.viewport(), button, pos=view.mapFromScene(scene_pos))


def _double_click(qtbot, view, scene_pos: QPointF):
    """A real double click: press, release, double-click press, release (pyqtgraph reports it on release)."""
    pos = view.mapFromScene(scene_pos)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    qtbot.mouseRelease(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)


def _inspector_on(qtbot, lanes: list, lane: int):
    widget = _shown(qtbot, StepInspector(samples.model_of(lanes)))
    widget.set_step(lane, 0)
    qtbot.wait(10)
    return widget


@pytest.fixture
def inspector(qtbot):
    others = samples.timeline_lanes(samples.EN_CANDIDATES, steps=2)
    return _inspector_on(qtbot, [*others, samples.sampled_lane(samples.EN_CANDIDATES)], 3)


def test_inspector_bars_and_cutoffs_of_a_top_k_top_p_step(inspector):
    rows = inspector.rows()
    assert len(rows) == 20 and rows[0].text == " Paris" and rows[1].chosen
    raw, processed = inspector.bar_widths()
    assert raw[:3] == pytest.approx([0.46, 0.14, 0.09])
    assert all(w > 0 for w in processed[:3]) and all(w == 0 for w in processed[3:])
    assert sum(processed) == pytest.approx(1.0)
    lines = inspector.drawn_lines()
    assert lines["kept"] == 2.5 and lines["top_k"] == 4.5 and lines["top_p"] == 0.8
    assert "min_p" not in lines
    assert lines["draw"] == pytest.approx(inspector.cutoffs().intervals[1][0] + processed[1] / 2)
    numbers = inspector.numbers_text()
    assert "kept set 3 tokens" in numbers and "draw u 0." in numbers
    assert "flags ◆ first divergence from the reference" in numbers  # lane 3 departs from lane 0 here
    ticks = inspector._bars_plot.getAxis("left")._tickLevels[0]
    assert ticks[0] == (0, "·Paris") and ticks[1] == (1, "▶ ·a")


def test_inspector_min_p_line_and_no_draw_for_greedy_config(qtbot):
    lane = samples.min_p_lane(samples.ZH_CANDIDATES)
    lane.steps[0].draw = None
    widget = _inspector_on(qtbot, [lane], 0)
    lines = widget.drawn_lines()
    assert lines["min_p"] == pytest.approx(0.05 * lane.steps[0].top[0].prob)
    assert "draw" not in lines and "top_k" not in lines and "top_p" not in lines
    assert widget.rows()[0].text == "去"


def test_a_single_click_reads_a_row_and_a_double_click_branches(qtbot, inspector):
    view = inspector._canvas
    with qtbot.assertNotEmitted(inspector.branchRequested, wait=50):  # branching is never one left click
        _click(qtbot, view, inspector.scene_pos_of_row(2) + QPointF(4, 0))
    assert f"(id {inspector.rows()[2].token_id})" in inspector._picked_label.text()  # its numbers are shown instead
    with qtbot.waitSignal(inspector.branchRequested, timeout=1000) as blocker:
        _double_click(qtbot, view, inspector.scene_pos_of_row(2) + QPointF(4, 0))
    assert blocker.args == [3, 0, inspector.rows()[2].token_id]
    with qtbot.assertNotEmitted(inspector.branchRequested, wait=50):
        _double_click(qtbot, view, inspector.scene_pos_of_row(1) + QPointF(4, 0))  # the chosen token itself


def test_context_menu_forces_a_token_for_all_lanes(qtbot, inspector):
    _click(
        qtbot, inspector._canvas, inspector.scene_pos_of_row(4) + QPointF(4, 0), Qt.MouseButton.RightButton
    )
    menu = inspector.findChild(QMenu)
    assert menu is not None
    force = [a for a in menu.actions() if a.text().startswith("Force")][0]
    with qtbot.waitSignal(inspector.forceRequested, timeout=1000) as blocker:
        force.trigger()
    assert blocker.args == [0, inspector.rows()[4].token_id]
    menu.close()


def _timeline_on(qtbot, lanes):
    model = samples.model_of(lanes)
    widget = _shown(qtbot, Timeline(model, RedrawScheduler()), 760, 380)
    qtbot.wait(10)
    return widget


def _selections(model) -> list:
    seen: list = []
    model.events.connect("selection_changed", seen.append)
    return seen


@pytest.fixture
def timeline(qtbot):
    return _timeline_on(qtbot, samples.timeline_lanes(samples.EN_CANDIDATES, steps=12))


def test_timeline_click_selects_the_step_of_the_clicked_lane(qtbot, timeline):
    seen = _selections(timeline.state)
    _click(qtbot, timeline._view, timeline.scene_pos_of(2, 5))
    assert seen[-1] == Selection(2, 5)
    assert timeline.selected() == (2, 5)
    pens = [timeline._series[i].curve.opts["pen"] for i in range(3)]
    assert pens[2].widthF() > pens[0].widthF() == pens[1].widthF()  # the selected lane's curve stands out ...
    assert pens[2].color().alphaF() == 1.0 and pens[0].color().alphaF() < 0.5  # ... the others faded behind it
    _click(qtbot, timeline._view, timeline.scene_pos_of(0, 8))
    assert seen[-1] == Selection(0, 8)
    assert timeline._series[0].curve.opts["pen"].color().alphaF() == 1.0
    assert timeline._series[2].curve.opts["pen"].color().alphaF() < 0.5
    timeline.state._set_selection(None)  # as a new run does
    assert all(timeline._series[i].curve.opts["pen"].color().alphaF() == 1.0 for i in range(3))  # none selected


def test_left_right_keys_scrub_through_steps(qtbot, timeline):
    _click(qtbot, timeline._view, timeline.scene_pos_of(1, 5))
    assert timeline.hasFocus()
    seen = []
    timeline.state.events.connect("selection_changed", lambda s: seen.append((s.lane, s.step)))
    for key in (
        Qt.Key.Key_Right,
        Qt.Key.Key_Right,
        Qt.Key.Key_Left,
        Qt.Key.Key_End,
        Qt.Key.Key_Right,
        Qt.Key.Key_Home,
        Qt.Key.Key_Left,
    ):
        qtbot.keyClick(timeline, key)
    assert seen == [(1, 6), (1, 7), (1, 6), (1, 11), (1, 0)]  # staying put selects nothing new


def test_timeline_appends_incrementally_and_switches_metric(qtbot):
    lanes = samples.timeline_lanes(samples.ZH_CANDIDATES, steps=6)
    streaming = type(lanes[1])(lanes[1].name, lanes[1].config, [], steps=[])
    timeline = _timeline_on(qtbot, [lanes[0], streaming])
    model, scheduler = timeline.state, timeline._scheduler
    for record in lanes[1].steps[:2]:
        model.add_step(1, record)
    scheduler.flush()
    assert list(timeline.curve_data(1)[0]) == [0, 1]
    assert list(timeline._divergence_marks.getData()[0]) == []  # lane 1 departs later: not streamed yet
    for record in lanes[1].steps[2:]:
        model.add_step(1, record)
    scheduler.flush()
    xs, ys = timeline.curve_data(1)
    assert list(xs) == list(range(6)) and list(ys) == pytest.approx([s.prob for s in lanes[1].steps])
    timeline.set_metric("entropy_raw")
    assert list(timeline.curve_data(0)[1]) == pytest.approx([s.entropy_raw for s in lanes[0].steps])
    model.finish_job(None, {})
    split = model.divergence_step(1)
    assert split is not None and list(timeline._divergence_marks.getData()[0]) == [split]
    ties = [(lane, s.step) for lane, trace in enumerate(model.traces) for s in trace.steps
            if critical_point(s, model.critical) is not None]
    assert ties and sorted(timeline.markers()["critical"]) == sorted(ties)
    first = ties[0]
    assert timeline._critical_marks.getData()[1][0] == pytest.approx(model.traces[first[0]].steps[first[1]].entropy_raw)


def test_timeline_marks_the_branch_point_of_a_branched_lane(qtbot):
    lanes = samples.timeline_lanes(samples.EN_CANDIDATES, steps=8)
    branched = samples.timeline_lanes(samples.EN_CANDIDATES, steps=8)[2]
    branched.name = "T 1.3 ↳4"
    branched.branch = {"parent": "greedy", "step": 4, "token_id": branched.steps[4].token_id}
    timeline = _timeline_on(qtbot, [*lanes, branched])
    xs, ys = timeline._branch_marks.getData()
    assert list(xs) == [4] and list(ys) == pytest.approx([branched.steps[4].prob])
    assert "branch point" in timeline._legend.text() and branched.name in timeline._legend.text()


def test_clicking_a_lane_in_the_legend_hides_and_shows_its_line(qtbot, timeline):
    key = timeline.state.lanes[1].key
    timeline._on_legend_link(f"lane:{key}")  # what clicking the lane's legend entry does
    assert timeline.state.lanes[1].hidden and not timeline._series[1].curve.isVisible()
    assert "<s>" in timeline._legend.text()
    timeline._on_legend_link(f"lane:{key}")
    assert timeline._series[1].curve.isVisible()


def test_the_hover_readout_follows_the_metric(qtbot, timeline):
    timeline._on_hover(timeline.scene_pos_of(1, 3))
    assert "p(chosen) =" in timeline._hover.text()
    timeline.set_metric("entropy")
    assert "entropy (nats) =" in timeline._hover.text() and "p(chosen)" not in timeline._hover.text()


def test_timeline_streams_on_a_fixed_axis_and_reuses_its_curves(qtbot):
    """While streaming: the step axis spans the run and points are plain lines; afterwards symbols and
    autoscaling are back, and a new run of the same lanes reuses their curves."""
    lanes = samples.timeline_lanes(samples.ZH_CANDIDATES, steps=5)
    timeline = _timeline_on(qtbot, lanes)
    model, scheduler = timeline.state, timeline._scheduler
    curves = [series.curve for series in timeline._series]
    model.start_job(RunTask.kind, {(lane.key, 0): lane.spec for lane in model.lanes}, 40)
    assert [series.curve for series in timeline._series] == curves
    assert all(series.curve.opts["symbol"] is None for series in timeline._series)
    for record in lanes[1].steps[:4]:
        model.add_step(1, record)
    model.add_step(1, lanes[1].steps[2])  # a re-sent step replaces the lane's tail (a beam's best path)
    scheduler.flush()
    assert list(timeline.curve_data(1)[0]) == [0, 1, 2]
    x0, x1 = timeline._plot.vb.viewRange()[0]
    assert x0 < 0 and x1 > 39
    finished = {(lane.key, 0): trace for lane, trace in zip(model.lanes, lanes, strict=True)}
    model.finish_job(None, finished)
    assert all(series.curve.opts["symbol"] == "o" for series in timeline._series)
    assert list(timeline.curve_data(2)[1]) == pytest.approx([s.prob for s in lanes[2].steps])
    assert timeline._plot.vb.autoRangeEnabled()[0]
    shown = list(timeline._series)
    model.events.emit("lanes_reset")  # the same records again: nothing redrawn
    assert timeline._series == shown and list(timeline.curve_data(1)[0]) == list(range(5))


@pytest.fixture
def beam_tree(qtbot):
    widget = _shown(qtbot, BeamTreeView(), 760, 380)
    widget.set_lane(1, samples.beam_lane(samples.EN_BEAM_WORDS))
    qtbot.wait(10)
    return widget


def test_beam_tree_draws_kept_pruned_and_finished_nodes(beam_tree):
    # 4 steps x 4 candidates: 2 kept per step (beam 0 on the best path), 2 pruned, beam 1 finishes at the end.
    assert beam_tree.drawn_counts() == {"kept": 3, "pruned": 8, "finished": 1, "best": 4}
    pruned = beam_tree._scatters["pruned"].opts
    kept = beam_tree._scatters["kept"].opts
    assert pruned["brush"].color().name() == "#ffffff" and kept["brush"].color().name() != "#ffffff"
    assert pruned["size"] < kept["size"]
    assert [(n.step, n.slot) for n in beam_tree.best_nodes()] == [(0, 0), (1, 0), (2, 0), (3, 0)]
    assert len(beam_tree._best_edges.getData()[0]) == 8  # four best edges, two points each
    assert beam_tree.visible_labels()[:2] == ["·Paris", "·a"]
    assert len(beam_tree.visible_labels()) == 16


def test_beam_tree_streams_and_clicking_a_node_selects_its_step(qtbot):
    widget = _shown(qtbot, BeamTreeView(), 760, 380)
    full = samples.beam_lane(samples.ZH_BEAM_WORDS)
    lane = type(full)(full.name, full.config, [], steps=full.steps[:2])
    widget.set_lane(0, lane)
    assert len(widget.nodes()) == 8
    lane.steps.extend(full.steps[2:])
    widget.set_lane(0, lane)
    assert len(widget.nodes()) == 16 and len(widget.visible_labels()) == 16
    node = [n for n in widget.nodes() if n.step == 2 and n.kind == "kept"][0]
    with qtbot.waitSignal(widget.stepSelected, timeout=1000) as blocker:
        _click(qtbot, widget._view, widget.scene_pos_of(node))
    assert blocker.args == [0, 2]


def test_every_chart_exports_a_non_empty_png(qtbot, tmp_path, inspector, timeline, beam_tree):
    """Not just any pixels (an empty plot has axes, grid and title): the bars and curves in their own colours,
    with about a third of the pixels they cover in these samples (bars: thousands; 2-px curves: 1500 each)."""
    from gui.views.beam_tree import _BEST

    drawn = {
        "inspector": {style.PROCESSED_COLOUR: 1000, style.CHOSEN_COLOUR: 300, style.RAW_COLOUR: 800},
        "timeline": {style.lane_color_hex(lane.colour): 500 for lane in timeline.state.lanes},
        "beam_tree": {_BEST: 700, "#7FA7C9": 300},  # the best path and the kept beams' edges
    }
    for name, widget in (("inspector", inspector), ("timeline", timeline), ("beam_tree", beam_tree)):
        path = widget.export_png(tmp_path / f"{name}.png")
        image = QImage(str(path))
        assert not image.isNull() and image.width() >= 600 and image.height() >= 300
        colours = {image.pixel(x, y) for x in range(0, image.width(), 7) for y in range(0, image.height(), 7)}
        assert len(colours) > 10  # something was drawn, not a blank canvas
        counts = colour_counts(image)
        for colour, at_least in drawn[name].items():
            assert counts.get(colour.lower(), 0) >= at_least, f"{name}: {colour} drawn on {counts.get(colour.lower())}"


def test_export_to_an_unwritable_place_raises(inspector, tmp_path):
    with pytest.raises(OSError, match="could not write PNG"):
        inspector.export_png(tmp_path / "missing-dir" / "x.png")


def test_lane_colours_are_stable_and_distinct():
    assert style.lane_color_hex(0) == style.lane_color_hex(12)
    assert style.lane_pen_style(0) != style.lane_pen_style(12)
    assert len({style.lane_color_hex(i) for i in range(12)}) == 12


def test_inspector_shows_fewer_rows_when_short_but_keeps_the_chosen_token(qtbot, inspector):
    inspector.resize(460, 300)
    qtbot.wait(20)
    rows = inspector.rows()
    assert 5 <= len(rows) < 20 and any(r.chosen for r in rows)
    inspector.resize(700, 620)
    qtbot.wait(20)
    assert len(inspector.rows()) == 20


@pytest.mark.parametrize("width", [380, 700])
def test_the_draw_label_stays_inside_the_cumulative_plot(qtbot, width):
    # "u=0.660" right of its line ran out of a narrow plot (the side was chosen from a fraction of the axis)
    others = samples.timeline_lanes(samples.EN_CANDIDATES, steps=2)
    sampled = samples.sampled_lane(samples.EN_CANDIDATES)
    sampled.steps[0].draw = 0.66
    widget = _shown(qtbot, StepInspector(samples.model_of([*others, sampled])), width=width)
    widget.set_step(3, 0)
    qtbot.wait(20)
    label = widget._draw_line.label
    view = widget._cum_plot.vb.sceneBoundingRect()
    drawn = label.sceneBoundingRect()
    assert label.isVisible() and view.left() - 1 <= drawn.left() and drawn.right() <= view.right() + 1


@pytest.mark.parametrize("width", [380, 520, 700])
def test_the_draw_and_top_p_labels_never_cover_each_other(qtbot, width):
    # at 1280×800 "top-p 0.9", drawn left of its line in the narrow step panel, sat on "u=0.248"
    others = samples.timeline_lanes(samples.EN_CANDIDATES, steps=2)
    overlapped = 0
    for u in (0.2, 0.3, 0.45, 0.55, 0.62, 0.7, 0.75, 0.79):
        sampled = samples.sampled_lane(samples.EN_CANDIDATES)
        sampled.steps[0].draw = u
        widget = _shown(qtbot, StepInspector(samples.model_of([*others, sampled])), width=width)
        widget.set_step(3, 0)
        qtbot.wait(10)
        draw, top_p = widget._draw_line.label, widget._top_p_line.label
        assert draw.isVisible() and top_p.isVisible() and "top-p 0.8" in top_p.toPlainText()
        assert not draw.sceneBoundingRect().intersects(top_p.sceneBoundingRect()), f"u={u}"
        overlapped += draw.orthoPos != 0.98  # moved off its usual height to stay clear
        view = widget._cum_plot.vb.sceneBoundingRect()
        drawn = draw.sceneBoundingRect()
        assert view.top() - 1 <= drawn.top() and drawn.bottom() <= view.bottom() + 1
        widget.close()
    assert overlapped  # some of these draws would have covered the top-p label


def test_the_picked_rows_readout_has_the_panels_width(qtbot, inspector):
    inspector.resize(340, 390)  # the step panel at 1280×800
    qtbot.wait(20)
    _click(qtbot, inspector._canvas, inspector.scene_pos_of_row(2) + QPointF(4, 0))
    label = inspector._picked_label
    assert f"(id {inspector.rows()[2].token_id})" in label.text()
    assert label.width() >= inspector.width() - 20  # not a third of it beside the controls
    needed = label.heightForWidth(label.width())
    assert needed <= label.height(), "the picked row's readout is cut"
