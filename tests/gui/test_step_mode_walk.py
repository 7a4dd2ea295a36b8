"""Step mode as a user walks it with a greedy, a sampled and a beam lane (tiny model): twenty tokens by F7, F8 on
each lane and hand picks (double-clicking another candidate in the inspector; on the beam lane that is refused
with a notice), every view checked after each action — the text (the proposed token marked, its tooltip, the
lane's summary), the inspector (the proposed step; a beam lane's beams), the session tree (nothing grows until
step mode ends) and the lanes editor; then Save (which ends step mode), Open in a new window, Replay: every token
and draw made again exactly."""

from __future__ import annotations

import re

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QApplication

from decoding.analysis import session_tree
from runfiles import run_file
from tests.gui_helpers import anchors, take_candidate, token_point, wait_idle

GREEDY, BEAM, SAMPLED = 0, 1, 2


def italic_at(window, lane: int, step: int) -> bool:
    """Whether the token tok:<lane>:<step> is drawn in italics in its lane's text."""
    browser = window.text.columns[lane].browser
    cursor = QTextCursor(browser.document())
    cursor.setPosition(anchors(window, lane)[f"tok:{lane}:{step}"] + 1)
    return cursor.charFormat().fontItalic()


def check_step_mode_views(qtbot, window, taken: int) -> None:
    """Every lane has `taken` steps taken and its next one proposed; every view says so."""
    state = window.state
    for index, lane in enumerate(state.lanes):
        assert len(lane.trace.steps) == taken + 1 and state.proposed_step(index) == taken, lane.name
        assert not lane.stale
        assert italic_at(window, index, taken) and (taken == 0 or not italic_at(window, index, taken - 1))
        tip = window.text.columns[index].browser.tooltip_at(token_point(qtbot, window, index, taken))
        assert "proposed, not yet taken" in tip and f"step {taken}</b>" in tip, lane.name
        assert f"step {taken} proposed" in window.text.columns[index].summary.text()
    selection = state.selection
    assert selection is not None and selection.step == taken  # the newest step selected
    inspector = window.inspector
    assert inspector._step.step == taken and "proposed, not yet taken" in inspector._title.text()
    beams = inspector.beams_text()
    if selection.lane == BEAM:
        live = 1 if taken == 0 else 4
        assert len(re.findall(r"^beam \d+ · score -?\d+\.\d+ “", beams, re.M)) == live, beams  # each beam it extends
    else:
        assert beams == ""
    assert window.session_tree.rows() == []  # step mode's steps become nodes when it ends
    editor = window.lanes
    assert editor.table.rowCount() == 3 and editor.selected_index() == selection.lane
    assert [editor.table.item(row, 0).text() for row in range(3)] == [lane.name for lane in state.lanes]


def test_twenty_hand_steps_of_greedy_sampled_and_beam_lanes_survive_save_open_and_replay(
        qtbot, make_window, tiny_model_dir, tmp_path):
    window = make_window(tiny_model_dir)
    window.activateWindow()  # the keys are the window's shortcuts
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    window.show_view("session_tree")
    while len(window.state.lanes) > 3:
        window.state.remove_lane(3)
    assert [lane.spec.is_beam for lane in window.state.lanes] == [False, True, False]
    assert window.state.lanes[SAMPLED].spec.do_sample
    window.prompt.editor.setPlainText("Once upon a time")
    window.prompt.max_new_tokens.setValue(24)
    qtbot.keyClick(window, Qt.Key.Key_F6)
    wait_idle(qtbot, window)
    check_step_mode_views(qtbot, window, 0)
    picks: dict[int, dict[int, int]] = {GREEDY: {}, SAMPLED: {}}
    for step in range(20):
        if step % 5 == 2:  # by hand: another candidate on the greedy and the sampled lane; the beam lane refuses
            for lane in (GREEDY, SAMPLED):
                own = window.state.lanes[lane].trace.steps[step].token_id
                token, _ = take_candidate(qtbot, window, lane)
                record = window.state.lanes[lane].trace.steps[step]
                assert record.forced and record.token_id == token != own and not italic_at(window, lane, step)
                picks[lane][step] = token
            before = list(window.state.lanes[BEAM].trace.token_ids)
            take_candidate(qtbot, window, BEAM)
            assert "beam lane's step" in window.state.notice.text
            assert window.state.lanes[BEAM].trace.token_ids == before
            window.state.clear_notice()
            qtbot.keyClick(window, Qt.Key.Key_F8)  # the beam lane selected: its own step
            wait_idle(qtbot, window)
        elif step % 5 == 4:  # F8 on each lane in turn
            for lane in (BEAM, SAMPLED, GREEDY):
                window.state.select(lane, step)
                qtbot.keyClick(window, Qt.Key.Key_F8)
                wait_idle(qtbot, window)
        else:
            qtbot.keyClick(window, Qt.Key.Key_F7)
            wait_idle(qtbot, window)
        check_step_mode_views(qtbot, window, step + 1)
    stepped = {lane.name: list(lane.trace.token_ids[:20]) for lane in window.state.lanes}

    path = tmp_path / "walked.json"
    assert window.files.save(path)  # ends step mode: the steps taken, the picks forced
    assert not window.controller.step_mode and window.state.proposals == {}
    for index, lane in enumerate(window.state.lanes):
        assert lane.spec.max_new_tokens == 20 and lane.spec.forced == picks.get(index, {}), lane.name
        assert not any(italic_at(window, index, s) for s in range(len(lane.trace.steps)))
        assert "proposed" not in window.text.columns[index].summary.text()
    for lane in (GREEDY, SAMPLED):
        assert window.state.lanes[lane].trace.token_ids == stepped[window.state.lanes[lane].name]
    beam = window.state.lanes[BEAM].trace  # the search of 20 tokens, made again: its best final sequence
    assert beam.finish_reason in ("eos", "length") and beam.sequences
    saved = run_file.load(path)
    assert [lane.token_ids for lane in saved.lanes] == [lane.trace.token_ids for lane in window.state.lanes]
    assert [n.kind for n in saved.tree] == ["forced", "run", "forced"] and len(window.session_tree.rows()) == 3
    assert window.lanes.table.rowCount() == 3

    opened = make_window(tiny_model_dir)
    opened.show_view("session_tree")
    assert opened.files.open(path)
    assert [lane.name for lane in opened.state.lanes] == [lane.name for lane in window.state.lanes]
    assert opened.text.column_texts() == window.text.column_texts()
    assert len(opened.session_tree.rows()) == 3 and opened.lanes.table.rowCount() == 3
    assert [lane.spec.forced for lane in opened.state.lanes] == [lane.spec.forced for lane in window.state.lanes]
    opened.state.select(BEAM, 5)
    assert opened.inspector._step.step == 5 and "proposed" not in opened.inspector._title.text()
    assert opened.inspector.beams_text() == ""
    before = {lane.name: (list(lane.trace.token_ids), [r.draw for r in lane.trace.steps],
                          lane.trace.sequences) for lane in opened.state.lanes}
    opened.controller.replay()
    wait_idle(qtbot, opened)
    assert "every token identical" in opened.status.currentMessage()
    assert {lane.name: (lane.trace.token_ids, [r.draw for r in lane.trace.steps], lane.trace.sequences)
            for lane in opened.state.lanes} == before
    assert all(node.parent is None for node in opened.state.tree)
    for lane in opened.state.lanes:
        node = opened.state.lane_nodes[lane.key]
        assert session_tree.full_tokens(opened.state.tree, node) == lane.trace.token_ids
