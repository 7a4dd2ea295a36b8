"""Issue 33, item 9, as a new user met it (tiny model, real widgets): "Force for all lanes" grows the session tree
by branches — each lane's forced node under that lane's run node at the forced step, labelled ★ and its token —
not new unlabelled roots; every label sits on its own row, so a click (or right-click) on a label is one on its
node; "Prune" names the node and how many nodes go with it, and can be undone."""

from __future__ import annotations

from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QMenu

from gui.present.chart_rows import display_token
from tests.gui_helpers import run_and_wait, wait_idle

STEP = 3


def test_force_for_all_lanes_branches_each_lane_and_labels_and_prune_read_right(qtbot, window):
    tree_view = window.show_view("session_tree")
    run_and_wait(qtbot, window, max_new_tokens=8)
    runs = {row.node.lane: row.node for row in tree_view.rows()}
    assert len(runs) == 5 and all(node.parent is None for node in runs.values())

    token = window.state.lanes[0].trace.steps[STEP].top[1]  # the greedy lane's runner-up at step 3
    window.inspector.forceRequested.emit(STEP, token.id)  # the inspector row's "Force for all lanes"
    wait_idle(qtbot, window)
    rows = tree_view.rows()
    forced = [row for row in rows if row.node.kind == "forced"]
    assert len(forced) == 5 and len(rows) == 10
    for row in forced:
        parent = runs[row.node.lane]
        assert (row.node.parent, row.node.step) == (parent.id, STEP), row.node.lane
        assert row.parent_row == next(r.row for r in rows if r.node.id == parent.id)
        label = tree_view.labels()[row.row]
        assert label.startswith(f"{row.node.lane} ★“{display_token(token.text, 16)}”"), label

    # each label lies within its own row: a click on it selects its node's lane
    qtbot.wait(50)
    for row, label in zip(rows, tree_view._labels, strict=True):
        centre = label.sceneBoundingRect().center()
        assert tree_view._row_at(centre) is row, (row.node.lane, tree_view._row_at(centre))
    target = forced[2]
    view = tree_view._view
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=view.mapFromScene(tree_view._labels[target.row].sceneBoundingRect().center()))
    assert window.state.selection is not None
    assert window.state.lanes[window.state.selection.lane].name == target.node.lane

    # prune says what goes, and Undo brings it back
    root = runs["greedy"]
    shown: list[list[str]] = []  # the right-click menus' entries, as they would pop up
    original_popup = QMenu.popup
    QMenu.popup = lambda menu, *_args: shown.append([a.text() for a in menu.actions()])
    try:
        tree_view._menu(root.id, QPointF(view.mapToGlobal(view.rect().center())))
        assert "Prune “greedy” and the 1 node(s) under it" in shown[-1]
        tree_view.prune(root.id)
        assert len(tree_view.rows()) == 8 and "greedy" not in [r.node.lane for r in tree_view.rows()]
        tree_view._menu(runs["beam-4"].id, QPointF(view.mapToGlobal(view.rect().center())))
        assert "Undo prune (2 node(s))" in shown[-1]
    finally:
        QMenu.popup = original_popup
    tree_view.undo_prune()
    assert [r.node.id for r in tree_view.rows()] == [r.node.id for r in rows]
    assert len(tree_view.labels()) == 10
