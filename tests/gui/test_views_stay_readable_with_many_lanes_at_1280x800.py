"""Issue 33, items 6 and 7, as a new user met them (tiny model, real widgets, the window at 1280×800): the
timeline draws strips from the five lanes a new window starts with; a 32-member fan-out's tree fades the members
that went their own way, so its splits read (it was a solid fan); the entropy plane's regime words do not overlap;
a lane's automatic name stays short however many processors it has (the full spec in the tooltip) and neither a
long automatic nor a long given name squeezes the lanes table's strategy column or one of the side-by-side's
two charts."""

from __future__ import annotations

import itertools

from gui.views.fanout_view import _LONE_WIDTH
from tests.gui_helpers import run_and_wait

LONG_NAME = "my very long lane name for the top-p experiments of tuesday"


def test_eleven_lanes_and_a_32_member_fan_out_stay_readable(qtbot, window):
    assert window.size().width() == 1280 and len(window.state.lanes) == 5
    timeline = window.show_view("timeline")
    assert timeline.strips()  # "auto": strips from five lanes

    editor = window.lanes
    editor._select_row(3)  # top-p 0.9: given four processors, its name stays short
    form = editor.form
    form.widgets["dry_multiplier"].setValue(0.8)
    form.widgets["top_n_sigma"].setValue(1.0)
    form.widgets["xtc_probability"].setValue(0.5)
    spec = window.state.lanes[3].spec
    assert spec.name == "dry-multiplier 0.8 top-p 0.9 +2"
    assert "xtc_probability=0.5" in editor.table.item(3, 1).toolTip()
    for preset in ("Min-p 0.05", "creative", "precise"):
        editor.add_preset(preset)
    editor.add_order_pair()
    fan = editor.add_preset("Top-p 0.9")
    window.state.set_fanout(fan, 32)
    window.state.replace_spec(1, window.state.lanes[1].spec.with_changes(name=LONG_NAME), named_by_user=True)
    assert len(window.state.lanes) == 11
    run_and_wait(qtbot, window, max_new_tokens=16)

    # the lanes table: names cut at a bound, the strategy column keeps its room
    table = editor.table
    assert table.columnWidth(0) <= 150 and table.columnWidth(1) >= 0.4 * table.viewport().width()

    # the fan-out tree: the lone members' tails thin and faded; the shared trunks drawn full
    window.state.select(fan, 2)
    fanout = window.show_view("fanout")
    qtbot.wait(50)
    pens = [line.opts["pen"] for line in fanout._lines if line.isVisible()]
    lone = [pen for pen in pens if pen.widthF() == _LONE_WIDTH]
    assert lone and all(pen.color().alphaF() < 0.5 for pen in lone)
    assert any(pen.widthF() > _LONE_WIDTH and pen.color().alphaF() == 1.0 for pen in pens)

    # the entropy plane's four regime words: none covers another
    plane = window.show_view("entropy_plane")
    qtbot.wait(50)
    rects = [label.sceneBoundingRect() for label in plane.regime_labels]
    assert len(rects) == 4 and not any(a.intersects(b) for a, b in itertools.combinations(rects, 2))

    # side by side with the long-named lane: both distributions as wide
    window.state.select(1, 2)
    compare = window.show_view("compare")
    qtbot.wait(50)
    widths = [plot.sceneBoundingRect().width() for plot in compare._plots.values()]
    assert min(widths) >= 0.8 * max(widths), widths
