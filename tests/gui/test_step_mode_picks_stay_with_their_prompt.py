"""Issue 33, items 1 and 10, as a new user met them (tiny model, real widgets): F6, F7 a few steps, double-click
candidates other than the lanes' own, F9 on one lane, Save; each lane's header says what it is made to take and
where step mode stopped it. Run again on the same prompt: the picks are made again. Change the prompt and Run: no
lane takes the old picks or stops at the old length, and the notice says which lanes dropped them. Refusals come
before "Save changes?": an empty prompt or one past the model's positions is refused without a question."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from gui.shell import unsaved
from tests.gui_helpers import run_and_wait, take_candidate, wait_idle

GREEDY, TOP_P = 0, 3
MAX = 24


def test_hand_picks_hold_for_their_prompt_only(qtbot, window, tmp_path):
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    window.prompt.editor.setPlainText("Once upon a time")
    window.prompt.max_new_tokens.setValue(MAX)
    qtbot.keyClick(window, Qt.Key.Key_F6)
    wait_idle(qtbot, window)
    for _ in range(5):
        qtbot.keyClick(window, Qt.Key.Key_F7)
        wait_idle(qtbot, window)
    picked = {}
    for lane in (GREEDY, TOP_P):
        token, own = take_candidate(qtbot, window, lane)  # at step 5, instead of the lane's own pick
        assert token != own
        picked[lane] = token
    window.state.select(TOP_P, 6)
    qtbot.keyClick(window, Qt.Key.Key_F9)  # top-p runs to its end; the others stop where they are
    wait_idle(qtbot, window)
    assert window.files.save(tmp_path / "stepped.json")  # ends step mode
    state = window.state
    assert state.lanes[GREEDY].spec.forced == {5: picked[GREEDY]} and state.lanes[GREEDY].spec.max_new_tokens == 6
    assert state.lanes[TOP_P].spec.forced == {5: picked[TOP_P]}
    header = window.text.columns[GREEDY].title.text()
    assert "★ forced at step 5" in header and "stops after 6 tokens (step mode)" in header
    assert "★ forced at step 5" in window.text.columns[TOP_P].title.text()
    assert "★" not in window.text.columns[1].title.text()  # the beam lane: nothing picked

    # the same prompt again: the picks are the run's, made again
    run_and_wait(qtbot, window, max_new_tokens=MAX)
    assert state.lanes[GREEDY].trace.token_ids[5] == picked[GREEDY] and len(state.lanes[GREEDY].trace.steps) == 6
    assert state.lanes[TOP_P].trace.steps[5].forced

    # another prompt: no lane takes the old picks or stops at the old length, and the notice names them
    window.prompt.editor.setPlainText("The old lighthouse keeper")
    run_and_wait(qtbot, window, max_new_tokens=MAX)
    for index, lane in enumerate(state.lanes):
        assert lane.spec.forced == {} and lane.spec.max_new_tokens is None, lane.name
        assert not any(step.forced for step in lane.trace.steps), lane.name
        assert "★" not in window.text.columns[index].title.text()
    assert len(state.lanes[GREEDY].trace.steps) == MAX or state.lanes[GREEDY].trace.finish_reason == "eos"
    text = state.notice.text
    assert text.startswith("The prompt changed: these lanes run without the tokens picked by hand")
    assert f"“{state.lanes[GREEDY].name}”" in text and f"“{state.lanes[TOP_P].name}”" in text
    assert not any("forced" in window.lanes.table.item(i, 1).text() or "max " in window.lanes.table.item(i, 1).text()
                   for i in range(len(state.lanes)))


def test_a_refused_run_is_refused_before_save_changes_is_asked(qtbot, window, monkeypatch):
    run_and_wait(qtbot, window, max_new_tokens=4)
    window.unsaved.ask_before_run = True
    asked = []
    monkeypatch.setattr(unsaved, "ask_to_save", lambda *_a, **_k: (asked.append(1), (unsaved.Answer.CANCEL, False))[1])
    assert window.unsaved.unsaved
    window.prompt.editor.setPlainText("   ")
    qtbot.mouseClick(window.prompt.run_button, Qt.MouseButton.LeftButton)
    assert asked == [] and window.state.notice.text.startswith("The prompt is empty")
    window.prompt.editor.setPlainText("word " * 600)  # past the tiny model's 512 positions
    qtbot.mouseClick(window.prompt.run_button, Qt.MouseButton.LeftButton)
    assert asked == [] and "Cannot run" in window.state.notice.text
    window.prompt.editor.setPlainText("A fine prompt")
    qtbot.mouseClick(window.prompt.run_button, Qt.MouseButton.LeftButton)
    assert asked == [1] and not window.worker.is_running()  # asked, and Cancel kept the run
