"""The session tree in the window, as a user walks it: ten branches made by double-clicking the inspector's bars,
each a new node under the lane it came from; every one reached again by clicking it in the tree (its lane and
branch step selected in every view); Ctrl+Z takes the last leaf away; bookmarks, notes, hiding and pruning; the
tree saved, opened in a new window, a deep node brought back with the model (double-click), and replayed."""

from __future__ import annotations

from PySide6.QtCore import QPointF, Qt

from decoding.analysis import session_tree
from runfiles import run_file
from tests.gui_helpers import run_and_wait, wait_idle


def branch_by_hand(qtbot, window, lane: int, step: int) -> str:
    """Double-click the first bar of the inspector that the lane did not choose at `step`; returns the new lane's
    name."""
    before = set(window.state.names())
    assert window.state.select(lane, step)
    qtbot.wait(30)
    inspector = window.inspector
    row = next(i for i, r in enumerate(inspector.rows()) if not r.chosen)
    view = inspector._canvas
    pos = view.mapFromScene(inspector.scene_pos_of_row(row) + QPointF(4, 0))
    qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    qtbot.mouseRelease(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    wait_idle(qtbot, window)
    (name,) = set(window.state.names()) - before
    return name


def names(window) -> list[str]:
    return [lane.name for lane in window.state.lanes]


def click_node(qtbot, window, node_id: int) -> None:
    tree = window.session_tree
    view = tree._view
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.mapFromScene(tree.scene_pos_of(node_id)))


def tree_agrees_with_lanes(window) -> None:
    """Every lane that ran is a node holding its tokens; the view draws one row per shown node."""
    state = window.state
    for lane in state.lanes:
        if lane.trace.steps:
            node = state.lane_nodes[lane.key]
            assert session_tree.full_tokens(state.tree, node) == lane.trace.token_ids, lane.name
    shown = [row.node.id for row in window.session_tree.rows()]
    assert sorted(shown) == sorted(n.id for n in state.tree if not any(
        a.hidden for a in session_tree.path(state.tree, n.id)[:-1]))


def test_ten_branches_are_reached_again_from_the_tree_and_survive_save_open_bring_back_and_replay(
        qtbot, window, make_window, tiny_model_dir, tmp_path):
    run_and_wait(qtbot, window, max_new_tokens=10)
    window.show_view("session_tree")
    lanes = len(window.state.lanes)
    assert len(window.session_tree.rows()) == lanes and all(r.depth == 0 for r in window.session_tree.rows())
    made: list[str] = []
    parents = ["greedy", "greedy", None, None, "greedy", None, None, "greedy", None, None]  # None: the last branch
    for number, parent in enumerate(parents):
        parent_name = parent or made[-1]
        parent_index = [lane.name for lane in window.state.lanes].index(parent_name)
        step = 1 + number % 4 + (0 if parent else window.state.branch_step(parent_index) or 0)
        name = branch_by_hand(qtbot, window, parent_index, min(step, 8))
        made.append(name)
        node = session_tree.node_of(window.state.tree, window.state.lane_nodes[window.state.lanes[
            names(window).index(name)].key])
        parent_node = session_tree.node_of(window.state.tree, node.parent)
        assert parent_node.lane == parent_name and node.kind == "branch"
        assert len(window.session_tree.rows()) == lanes + number + 1
        label = window.session_tree.labels()[window.session_tree.row_of(node.id)]
        assert label.startswith(f"{name} “")
        tree_agrees_with_lanes(window)
    assert max(session_tree.depth(window.state.tree, n.id) for n in window.state.tree) >= 3
    for name in made:  # back to every branch from the tree
        index = names(window).index(name)
        node_id = window.state.lane_nodes[window.state.lanes[index].key]
        click_node(qtbot, window, node_id)
        node = session_tree.node_of(window.state.tree, node_id)
        assert window.state.selection.lane == index and window.state.selection.step == node.step, name
        assert window.session_tree.selected_node() == node_id
        assert window.inspector._lane_index == index
        assert name in window.status.selection.text()
    last = window.state.lane_nodes[window.state.lanes[names(window).index(made[-1])].key]
    qtbot.keyClick(window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert made[-1] not in window.state.names()
    assert last not in {n.id for n in window.state.tree} and len(window.session_tree.rows()) == lanes + 9
    tree_agrees_with_lanes(window)
    deep = max(window.state.tree, key=lambda n: session_tree.depth(window.state.tree, n.id))
    window.session_tree.toggle_bookmark(deep.id)
    window.session_tree.set_note(deep.id, "keep this ✓")
    assert window.session_tree.labels()[window.session_tree.row_of(deep.id)].endswith("⚑ — keep this ✓")
    first_branch = session_tree.path(window.state.tree, deep.id)[1].id  # a branch with branches under it
    window.session_tree.toggle_hidden(first_branch)
    hidden_below = len(session_tree.subtree(window.state.tree, first_branch)) - 1
    assert hidden_below >= 2 and len(window.session_tree.rows()) == lanes + 9 - hidden_below
    assert window.session_tree.labels()[window.session_tree.row_of(first_branch)].endswith(f"(+{hidden_below})")
    tree_agrees_with_lanes(window)
    window.session_tree.toggle_hidden(first_branch)

    path = tmp_path / "tree.json"
    window.files.save(path)
    assert run_file.load(path).tree == window.state.tree
    reopened = make_window(tiny_model_dir)
    reopened.files.open(path)
    reopened.show_view("session_tree")
    assert reopened.state.tree == window.state.tree
    assert reopened.session_tree.labels() == window.session_tree.labels()
    click_node(qtbot, reopened, deep.id)
    assert reopened.state.lanes[reopened.state.selection.lane].name == deep.lane
    tree_view = reopened.session_tree
    pos = tree_view._view.mapFromScene(tree_view.scene_pos_of(deep.id))
    qtbot.mouseDClick(tree_view._view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    qtbot.mouseRelease(tree_view._view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    wait_idle(qtbot, reopened)
    chain = session_tree.path(reopened.state.tree, deep.id)
    assert names(reopened) == [node.lane for node in chain]
    colours = {lane.name: lane.colour for lane in window.state.lanes}  # brought back in the colours they had
    assert [lane.colour for lane in reopened.state.lanes] == [colours[node.lane] for node in chain] != list(
        range(len(chain)))
    assert reopened.state.lanes[-1].trace.token_ids == session_tree.full_tokens(reopened.state.tree, deep.id)
    assert reopened.state.tree == window.state.tree  # every node kept
    assert reopened.state.notice is None
    tree_agrees_with_lanes(reopened)
    reopened.controller.replay()
    wait_idle(qtbot, reopened)
    assert "every token identical" in reopened.status.currentMessage()
    assert reopened.state.tree == window.state.tree
