"""Many lanes in the window (issue 23, item 6): a user adds lanes from the Add menu until there are thirteen and
runs; every lane keeps a colour of its own (twelve distinct on screen, the thirteenth dashed), and the timeline
draws one strip per lane on the shared step axis, switchable back to overlaid lines."""

from __future__ import annotations

import itertools

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QImage, QPainter

from gui.present import colours
from gui.views import style
from tests.gui_helpers import colour_counts, run_and_wait


def _add_lanes_until(qtbot, window, count: int) -> None:
    presets = itertools.cycle(window.lanes.add_button.menu().actions())
    while len(window.state.lanes) < count:
        next(presets).trigger()
    qtbot.wait(10)


def _strip_label_rects(timeline) -> list[QRectF]:
    """Where the left axis writes each lane's name, as the axis lays its ticks out."""
    axis = timeline._plot.getAxis("left")
    image = QImage(axis.boundingRect().size().toSize(), QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)  # (axis spec, tick specs, text specs)
    finally:
        painter.end()
    return [rect for rect, _flags, _text in specs[2]]


def test_thirteen_lanes_keep_their_own_colours_and_strips(qtbot, window):
    _add_lanes_until(qtbot, window, 13)
    run_and_wait(qtbot, window, max_new_tokens=10)
    lanes = window.state.lanes
    assert len({lane.colour for lane in lanes}) == 13  # a colour index for life, none shared
    window.charts.setCurrentWidget(window.timeline)
    timeline = window.timeline
    timeline.resize(1200, 900)
    qtbot.wait(50)

    # auto layout with 13 lanes: one strip per lane, the first lane on top, each named on the left
    assert timeline.strips()
    for index in range(len(lanes)):
        ys = timeline.curve_data(index)[1]
        base = len(lanes) - 1 - index
        assert len(ys) == 10 and np.all((ys >= base) & (ys <= base + 0.8 + 1e-9))
    rects = _strip_label_rects(timeline)
    assert len(rects) == 13
    assert not any(a.intersects(b) for a, b in itertools.combinations(rects, 2))

    # twelve colours that differ on screen; the thirteenth shares the first's colour but not its line
    pens = [timeline._series[i].curve.opts["pen"] for i in range(13)]
    assert len({pen.color().name() for pen in pens[:12]}) == 12
    assert pens[12].color() == pens[0].color() and pens[12].style() != pens[0].style()
    drawn = colour_counts(timeline._view.grab().toImage())
    for hex_colour in colours.current().lanes:
        assert drawn.get(hex_colour.lower(), 0) > 20, f"{hex_colour} not drawn"
    assert "╍╍" in timeline._legend.text() and style.lane_swatch(12) != style.lane_swatch(0)

    # overlaid again: the values as they are, on the metric's own axis
    timeline._layout_combo.setCurrentIndex(1)
    assert not timeline.strips()
    for index, lane in enumerate(lanes):
        assert list(timeline.curve_data(index)[1]) == [step.prob for step in lane.trace.steps]
    assert timeline.view_state().layout == "overlay"
    # a click in strips mode selects the clicked lane's step
    timeline._layout_combo.setCurrentIndex(2)
    qtbot.wait(20)
    view = timeline._view
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.mapFromScene(timeline.scene_pos_of(7, 4)))
    selection = window.state.selection
    assert selection is not None and (selection.lane, selection.step) == (7, 4)


def test_exports_of_nine_lanes_a_fanout_and_a_long_beam_tree_are_readable(qtbot, window, tmp_path):
    """Nine lanes (one a beam lane, one fanned out to 16 seeds), 64 tokens, Export images: the beam tree keeps
    its token labels however long the run (it was capped at 3,000 px, and a 64-step tree lost them all), the
    timeline has room for each lane's strip, and the report fills its width with the charts in rows instead of
    one column down its left side (the long tree scaled to its width, whole in its own image)."""
    from gui.shell import image_export
    from gui.views.registry import VIEWS

    _add_lanes_until(qtbot, window, 9)
    names = [lane.name for lane in window.state.lanes]
    window.state.set_fanout(names.index("T 1.3"), 16)  # not "top-k 50": its members' names would be taken
    run_and_wait(qtbot, window, max_new_tokens=64)
    window.state.select(0, 3)
    paths = {p.name: p for p in window.export_images(tmp_path)}
    beam_steps = max(len(lane.trace.steps) for lane in window.state.lanes if lane.spec.is_beam)
    assert beam_steps == 64
    beam = QImage(str(paths["beam_tree.png"]))
    assert beam.width() >= 64 * beam_steps
    row = next(row for row in VIEWS if row.id == "beam_tree")
    drawn = image_export._drawn_off_screen(row, window.state.snapshot(), window.views["beam_tree"])
    try:
        labels = drawn.visible_labels()
        assert len(labels) == len(drawn._nodes) > 64  # every node of the tree labelled, pruned ones too
    finally:
        drawn.deleteLater()
    timeline = QImage(str(paths["timeline.png"]))
    assert timeline.height() >= 36 * 9
    report = QImage(str(paths["report.png"]))
    parts = [QImage(str(paths[name])) for name in ("text.png", *(f"{r.file_name}.png" for r in VIEWS))
             if name in paths]
    filled = sum(part.width() * part.height() * min(1.0, report.width() / part.width()) ** 2 for part in parts)
    assert filled >= 0.6 * report.width() * report.height()  # stacked in one column: about 0.4
    assert report.width() < beam.width()  # the long tree is scaled into the report


def test_the_lane_map_groups_a_fanouts_members_under_its_lane(qtbot, window):
    """Nine lanes, one fanned out to 16 seeds, Run, Lane map: one row per lane, the fan-out's collapsed to its
    own ("▸ T 1.3 ×16") with names that never cover each other; clicking the name shows its members under it
    ("#1" … "#15"), clicking again hides them; a member selected in the Fan-out tab shows its row."""
    _add_lanes_until(qtbot, window, 9)
    names = [lane.name for lane in window.state.lanes]
    fanned = names.index("T 1.3")
    window.state.set_fanout(fanned, 16)
    run_and_wait(qtbot, window, max_new_tokens=12)
    lane_map = window.views["lane_map"]
    window.charts.setCurrentWidget(lane_map)
    qtbot.wait(50)
    assert lane_map.rows() == [(index, 0) for index in range(9)]
    assert lane_map.row_labels()[fanned] == "▸ T 1.3 ×16"
    rects = _axis_label_rects(lane_map._plot.getAxis("left"))
    assert len(rects) == 9 and not any(a.intersects(b) for a, b in itertools.combinations(rects, 2))

    view = lane_map._view
    axis = lane_map._plot.getAxis("left").sceneBoundingRect()
    name_at = QPointF(axis.center().x(), lane_map.scene_pos_of(fanned, 0).y())
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.mapFromScene(name_at))
    rows = lane_map.rows()
    assert len(rows) == 9 + 15 and rows[fanned + 1: fanned + 16] == [(fanned, k) for k in range(1, 16)]
    assert lane_map.row_labels()[fanned] == "▾ T 1.3 ×16" and lane_map.row_labels()[fanned + 15] == "#15"
    qtbot.wait(500)  # not a double click
    name_at = QPointF(axis.center().x(), lane_map.scene_pos_of(fanned, 0).y())  # the rows are lower now
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.mapFromScene(name_at))
    assert len(lane_map.rows()) == 9

    window.state.select(fanned, 2, 7)  # what clicking member #7's branch in the Fan-out tab does
    assert (fanned, 7) in lane_map.rows()
    assert lane_map._cursor.getData()[1][0] == lane_map.rows().index((fanned, 7)) + 0.5


def _axis_label_rects(axis) -> list[QRectF]:
    image = QImage(axis.boundingRect().size().toSize(), QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        return [rect for rect, _flags, _text in axis.generateDrawSpecs(painter)[2]]
    finally:
        painter.end()


def test_the_timelines_controls_show_whole_in_the_charts_panel(qtbot, window):
    window.resize(1280, 800)
    window.charts.setCurrentWidget(window.timeline)
    qtbot.wait(50)
    for combo in (window.timeline._combo, window.timeline._layout_combo):
        assert combo.width() >= combo.sizeHint().width(), combo.currentText()


def test_a_preset_added_twice_then_fanned_out_runs_with_every_name_distinct(qtbot, window):
    """Found by a walkthrough: a second "top-k 50" was named "top-k 50 #2", the name of the first one's fan-out
    member #2, and the run was refused ("invalid lane names … allowed distinct names")."""
    _add_lanes_until(qtbot, window, 8)  # the five presets, then three of them again
    sampled = next(i for i, lane in enumerate(window.state.lanes) if lane.spec.do_sample)
    again = [lane.name for lane in window.state.lanes if lane.name.startswith(window.state.lanes[sampled].name)]
    assert len(again) == 2, again
    window.state.set_fanout(sampled, 8)
    run_and_wait(qtbot, window, max_new_tokens=4)
    notice = window.state.notice
    assert notice is None or notice.level != "error", notice.text
    names = [trace.name for lane in window.state.lanes for trace in lane.traces()]
    assert len(names) == len(set(names)) == 7 + 8
    assert all(lane.trace.steps for lane in window.state.lanes)
