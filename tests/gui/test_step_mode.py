"""Step mode in the window, as a user walks it with the tiny model: F6 turns it on (every lane's first step
proposed, the beam lane's too), twenty steps by Run / F7 and by double-clicking another candidate in the
inspector (taken as a forced token with its rank), the views showing each proposed step; F6 off keeps the steps
taken, and Replay makes every token again."""

from __future__ import annotations

from PySide6.QtCore import Qt

from tests.gui_helpers import take_candidate, wait_idle


def test_twenty_steps_by_hand_then_replay_makes_the_same_tokens(qtbot, window):
    window.prompt.editor.setPlainText("Once upon a time")
    window.prompt.max_new_tokens.setValue(24)
    names = [lane.name for lane in window.state.lanes]
    beam = next(i for i, lane in enumerate(window.state.lanes) if lane.spec.is_beam)
    qtbot.keyClick(window, Qt.Key.Key_F6)
    wait_idle(qtbot, window)
    assert window.controller.step_mode and "step mode" in window.status.currentMessage()
    for lane in window.state.lanes:
        assert len(lane.trace.steps) == 1 and lane.trace.finish_reason is None, lane.name
    assert window.state.proposals[beam].beams  # the beam lane's step shows its beams
    picks: dict[str, dict[int, int]] = {}
    for step in range(20):
        if step % 4 == 2:
            for lane in (0, 2):  # greedy and a sampled lane: another candidate, by hand
                token, own = take_candidate(qtbot, window, lane)
                record = window.state.lanes[lane].trace.steps[step]
                assert record.forced and record.token_id == token != own and record.top.rank_of(token) is not None
                picks.setdefault(names[lane], {})[step] = token
            for index in (1, 3, 4):  # the others one step each, by F8 on the selected lane
                window.state.select(index, len(window.state.lanes[index].trace.steps) - 1)
                qtbot.keyClick(window, Qt.Key.Key_F8)
                wait_idle(qtbot, window)
        else:
            qtbot.keyClick(window, Qt.Key.Key_F7)  # every lane one step
            wait_idle(qtbot, window)
        for lane in window.state.lanes:
            assert len(lane.trace.steps) == step + 2, (step, lane.name)  # steps taken + the proposed one
        selection = window.state.selection
        assert selection is not None and selection.step == len(window.state.lanes[selection.lane].trace.steps) - 1
        assert window.inspector._step.step == selection.step  # the inspector shows the proposed step
    qtbot.keyClick(window, Qt.Key.Key_F6)
    wait_idle(qtbot, window)
    assert not window.controller.step_mode and "step mode off" in window.status.currentMessage()
    for lane in window.state.lanes:
        assert lane.spec.max_new_tokens == 20 and not lane.stale, lane.name
        assert lane.spec.forced == picks.get(lane.name, {}), lane.name
        assert len(lane.trace.steps) == 20 or lane.spec.is_beam and lane.trace.finish_reason == "eos", lane.name
    before = {lane.name: list(lane.trace.token_ids) for lane in window.state.lanes}
    window.controller.replay()
    wait_idle(qtbot, window)
    assert {lane.name: lane.trace.token_ids for lane in window.state.lanes} == before
    assert "every token identical" in window.status.currentMessage()


def test_replay_in_step_mode_ends_it_and_replays_the_steps_taken(qtbot, window):
    window.prompt.editor.setPlainText("Once upon a time")
    window.prompt.max_new_tokens.setValue(12)
    qtbot.keyClick(window, Qt.Key.Key_F6)
    wait_idle(qtbot, window)
    for _ in range(3):
        qtbot.keyClick(window, Qt.Key.Key_F7)
        wait_idle(qtbot, window)
    greedy = window.state.lanes[0]
    assert len(greedy.trace.steps) == 4  # three taken, the fourth proposed
    taken = greedy.trace.token_ids[:3]
    window.controller.replay()
    wait_idle(qtbot, window)
    assert not window.controller.step_mode
    assert window.state.lanes[0].trace.token_ids == taken
    assert "every token identical" in window.status.currentMessage()


def test_step_mode_ended_before_any_step_keeps_no_proposed_step(qtbot, window):
    window.prompt.editor.setPlainText("Once upon a time")
    window.prompt.max_new_tokens.setValue(8)
    assert window.controller.toggle_step_mode()
    wait_idle(qtbot, window)
    assert all(len(lane.trace.steps) == 1 for lane in window.state.lanes)  # each lane's first step, proposed
    assert window.controller.toggle_step_mode()  # off: none was taken
    assert all(not lane.trace.steps for lane in window.state.lanes) and window.state.proposals == {}
    assert window.state.tree == []
