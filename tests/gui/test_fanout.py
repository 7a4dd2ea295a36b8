"""The fan-out tree on hand-made member traces: shared prefixes merge, each split has its tokens and member
counts, the summary numbers, hover text and click selection."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTabWidget, QWidget

from decoding.chain.spec import specs_of
from decoding.records.trace import LaneTrace, ModelInfo, PromptInfo, RunTrace, StepRecord, TokenProb
from gui.state.run_state import RunState, Selection
from gui.views import style
from gui.views.fanout_view import FanoutView, build_tree, place, walk
from gui.views.redraw import RedrawScheduler

TOKENS = [  # four members: #0 and #1 part at step 2; #2 and #3 at step 1; #3 ends early
    [5, 6, 7, 8],
    [5, 6, 9, 8],
    [5, 4, 4, 4],
    [5, 3],
]
TEXT = {3: " c", 4: " d", 5: " a", 6: " b", 7: " x", 8: " y", 9: " z"}


def member(k: int, tokens: list[int]) -> LaneTrace:
    steps = [StepRecord(step=s, token_id=t, token_text=TEXT[t], prob=0.5, prob_raw=0.5, logprob=-0.7,
                        logprob_raw=-0.7, entropy=1.0 + s, entropy_raw=1.0, margin=0.1 * s, margin_raw=0.1, kept=5,
                        tail_mass=0.0, tail_mass_raw=0.0, top=[TokenProb(t, TEXT[t], 0.5, 0)],
                        top_raw=[TokenProb(t, TEXT[t], 0.5, 0)], draw=0.3, draw_low=0.0, draw_high=0.5)
             for s, t in enumerate(tokens)]
    return LaneTrace(name=f"T 1.0 #{k}", config={"do_sample": True, "seed": 10 + k}, processors=[],
                     token_ids=list(tokens), steps=steps, fanout={"group": "T 1.0", "member": k})


def test_the_tree_merges_shared_prefixes_and_splits_where_members_part():
    root = build_tree(TOKENS)
    assert (root.start, root.end, sorted(root.members)) == (0, 1, [0, 1, 2, 3])
    by_members = {tuple(b.members): b for b in walk(root)}
    assert (by_members[(0, 1)].start, by_members[(0, 1)].end) == (1, 2)  # " b" shared until they part at 2
    assert by_members[(0,)].start == 2 and by_members[(1,)].start == 2
    assert by_members[(2,)].end == 4 and by_members[(3,)].end == 2  # member 3 ends after two tokens
    place(root, [0])
    leaves = [b for b in walk(root) if not b.children]
    assert sorted(b.y for b in leaves) == [0, 1, 2, 3]
    assert by_members[(0, 1)].y == pytest.approx((by_members[(0,)].y + by_members[(1,)].y) / 2)


def fanout_run(tokens: list[list[int]]) -> RunTrace:
    """A saved run of one lane fanned out to members taking `tokens` (TEXT spells them)."""
    members = [member(k, ids) for k, ids in enumerate(tokens)]
    return RunTrace(model=ModelInfo("m"), provider="", prompt=PromptInfo("p", [1]), lanes=members)


def shown_view(qtbot, tokens: list[list[int]], width: int = 800, height: int = 500) -> FanoutView:
    """The fan-out view of fanout_run(tokens) opened as a saved run opens (the members regroup into their lane)."""
    model = RunState()
    trace = fanout_run(tokens)
    model.show_trace(trace, specs_of(trace))
    view = FanoutView(model, RedrawScheduler())
    qtbot.addWidget(view)
    view.resize(width, height)
    view.show()
    qtbot.waitExposed(view)
    return view


@pytest.fixture
def view(qtbot):
    return shown_view(qtbot, TOKENS)


def test_the_view_draws_the_members_tree_and_its_numbers(view):
    assert [lane.name for lane in view.state.lanes] == ["T 1.0"] and view.state.lanes[0].fanout == 4
    summary = view.summary()
    assert "<b>4 members</b>" in summary and "<b>4</b> distinct" in summary and "seeds 10–13" in summary
    labels = sorted(item.toPlainText() for item in view._labels if item.isVisible())
    assert labels == ["·b ×2", "·c ×1", "·d ×1", "·x ×1", "·z ×1"]
    entropy = view._entropy.getData()[1]
    assert list(entropy) == pytest.approx([1.0, 2.0, 3.0, 4.0])  # mean over the members still running


def test_hover_reads_a_branch_and_click_selects_its_first_member(qtbot, view):
    branch = next(b for b in walk(view.tree()) if b.members == [0, 1])
    view._on_hover(view.scene_pos_of(branch))
    assert "members #0, #1" in view._hover.text() and "·b" in view.branch_text(branch).replace(" ", "·")
    seen = []
    view.state.events.connect("selection_changed", seen.append)
    target = next(b for b in walk(view.tree()) if b.members == [2])
    canvas = view._canvas
    qtbot.mouseClick(canvas.viewport(), Qt.MouseButton.LeftButton, pos=canvas.mapFromScene(view.scene_pos_of(target)))
    assert seen and seen[-1].lane == 0 and seen[-1].member == 2 and seen[-1] == Selection(0, seen[-1].step, 2)


def test_a_view_in_a_hidden_tab_draws_once_it_is_shown(qtbot, monkeypatch):
    # a streaming 32-member fan-out redrew its whole tree at every tick even in a hidden tab (0.6 s stalls)
    tabs = QTabWidget()
    model = RunState()
    view = FanoutView(model, RedrawScheduler())
    tabs.addTab(QWidget(), "timeline")
    tabs.addTab(view, "fan-out")
    qtbot.addWidget(tabs)
    tabs.show()
    qtbot.waitExposed(tabs)
    drawn = []
    original = view._draw_tree
    monkeypatch.setattr(view, "_draw_tree", lambda members: (drawn.append(len(members)), original(members)))
    trace = fanout_run(TOKENS)
    model.show_trace(trace, specs_of(trace))
    view.redraw()
    assert drawn == []  # hidden: only noted
    tabs.setCurrentWidget(view)
    assert drawn == [4] and "<b>4 members</b>" in view.summary()
    view.summary()
    assert drawn == [4]  # read again: nothing to redraw
    tabs.setCurrentIndex(0)
    model.select(0, 1, 0)
    view.redraw()
    assert drawn == [4] and view.tree() is not None and drawn == [4, 4]  # read while hidden: drawn for the reader


def test_labels_that_would_cover_each_other_are_left_to_hover(qtbot):
    # twelve members part at step 1 into twelve rows a few pixels apart: the labels kept never overlap, the
    # most-taken branch keeps its own, and a taller view shows more of them
    tokens = [[5, 6 if k < 3 else 7 + k, 8] for k in range(12)]
    for k in range(12):
        TEXT.setdefault(7 + k, f" t{k}")
    view = shown_view(qtbot, tokens, 500, 260)

    def shown():
        return [item for item in view._labels if item.isVisible()]

    small = shown()
    rects = [item.sceneBoundingRect() for item in small]
    assert all(not a.intersects(b) for i, a in enumerate(rects) for b in rects[i + 1:])
    assert "·b ×3" in [item.toPlainText() for item in small] and len(small) < 10
    view.resize(500, 900)
    qtbot.waitUntil(lambda: len(shown()) > len(small))


def test_a_split_inside_a_chinese_character_is_labelled_with_the_characters(qtbot):
    # byte-level BPE spells 虽 (e8 99 bd) and 虾 (e8 99 be) with a shared first piece: members that part at
    # the last byte read as the characters they spell, and one that parts at the first piece as its character
    text = {101: " a", 102: "\\xe8\\x99", 103: "\\xbd", 104: "\\xbe", 105: " b"}  # ids TOKENS does not use
    TEXT.update(text)
    try:
        widget = shown_view(qtbot, [[101, 102, 103], [101, 102, 104], [101, 105, 105]])
        labels = sorted(item.toPlainText() for item in widget._labels if item.isVisible())
        assert labels == ["·b ×1", "虽 ×1", "虽/虾 ×2", "虾 ×1"]  # the shared first piece: what its members spell
    finally:
        for key in text:
            TEXT.pop(key, None)


def test_a_sixteen_member_tree_opens_on_its_splits_with_labels_clear_of_the_lines(qtbot):
    """Sixteen members part within the first three of 32 steps: the step axis opens on the splits (a few steps
    past the last), labels never cover one another and sit on their own box over the lines; "all steps" shows
    the whole run."""
    tokens = [[5, 6 + k % 2, 20 + k // 2 % 4, 30 + k // 8] + [8] * 28 for k in range(16)]
    for token in (*range(20, 24), 30, 31):
        TEXT.setdefault(token, f" w{token}")
    view = shown_view(qtbot, tokens, 1000, 560)
    (left, right), _ = view._tree_plot.vb.viewRange()
    assert left < 0 and 3 + 2 <= right <= 3 + 4  # the last split is at step 3
    image = view._canvas.grab().toImage()  # painted: the labels have their places on screen
    shown = [item for item in view._labels if item.isVisible()]
    assert len(shown) >= 8
    rects = [item.sceneBoundingRect() for item in shown]
    assert all(not a.intersects(b) for i, a in enumerate(rects) for b in rects[i + 1:])
    lane_colour = view.state.lanes[0].colour
    ratio = image.width() / view._canvas.width()
    pure = style.lane_color(lane_colour).name()
    for rect in rects:
        box = view._canvas.mapFromScene(rect.center())
        for dx in range(-8, 9, 2):  # the label's middle row: ink and its box, no tree line drawn over them
            assert image.pixelColor(int((box.x() + dx) * ratio), int(box.y() * ratio)).name() != pure
    qtbot.mouseClick(view._all_steps, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: view._tree_plot.vb.viewRange()[0][1] >= 31)
