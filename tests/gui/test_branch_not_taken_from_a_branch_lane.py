"""Issue 33, item 2, as a new user met it (tiny model, real widgets): branch greedy at a step, select a ▲ (any
step with a runner-up) after the branch point on the branch lane, "Replay the branch not taken": a new lane
replays it (it failed with a red "ValueError: invalid branch step=…" and left an empty lane each try). A replay
that fails all the same adds no lane and says why in words, never an exception's class name."""

from __future__ import annotations

from dataclasses import replace

from decoding.analysis.critical import runner_up
from gui.state.tasks.branch import BranchTask
from tests.gui_helpers import run_and_wait, wait_idle

BRANCH_STEP = 4


def branch_lane(qtbot, window) -> int:
    run_and_wait(qtbot, window, max_new_tokens=16)
    greedy = window.state.lanes[0].trace
    window.text.request_branch(0, BRANCH_STEP, greedy.steps[BRANCH_STEP].top[1].id)
    wait_idle(qtbot, window)
    index = next(i for i, lane in enumerate(window.state.lanes) if lane.spec.branch is not None)
    assert len(window.state.lanes[index].trace.steps) > BRANCH_STEP + 2
    return index


def replayable_step(window, index: int) -> int:
    steps = window.state.lanes[index].trace.steps
    return next(s for s in range(BRANCH_STEP + 1, len(steps)) if runner_up(steps[s], window.state.critical))


def test_the_branch_not_taken_replays_on_a_branch_lane(qtbot, window):
    index = branch_lane(qtbot, window)
    step = replayable_step(window, index)
    lanes = len(window.state.lanes)
    window.state.select(index, step)
    window.text.request_replay(index, step)  # the token's menu entry
    wait_idle(qtbot, window)
    assert window.state.notice is None or window.state.notice.level != "error", window.state.notice
    assert len(window.state.lanes) == lanes + 1
    replay = window.state.lanes[index + 1]
    assert replay.spec.replay_of is not None and replay.trace.steps
    assert replay.trace.token_ids[:step] == window.state.lanes[index].trace.token_ids[:step]
    assert replay.trace.token_ids[step] != window.state.lanes[index].trace.token_ids[step]
    assert "runner-up" in replay.name and len(window.text.columns) == lanes + 1
    assert window.text.columns[index + 1].browser.toPlainText()


def test_a_replay_that_fails_adds_no_lane_and_says_why_in_words(qtbot, window, monkeypatch):
    index = branch_lane(qtbot, window)
    step = replayable_step(window, index)

    def failing(_task, _emit, _cancelled):
        raise ValueError("invalid something=3: allowed 4..5")

    monkeypatch.setattr(BranchTask, "work", failing)
    names = [lane.name for lane in window.state.lanes]
    for _ in range(2):
        window.text.request_replay(index, step)
        wait_idle(qtbot, window)
        assert [lane.name for lane in window.state.lanes] == names  # nothing left behind
        assert len(window.text.columns) == len(names) and window.lanes.table.rowCount() == len(names)
        text = window.error_banner.text()
        assert "invalid something=3: allowed 4..5" in text and "ValueError" not in text, text


def test_a_replay_the_engine_would_refuse_is_refused_before_any_lane_appears(qtbot, window, monkeypatch):
    """The lane's limit lowered after the run (to 3 tokens): its replay at a later step cannot run. The window
    says why and never shows the lane, not even for a moment."""
    index = branch_lane(qtbot, window)
    step = replayable_step(window, index)
    lane = window.state.lanes[index]
    lane.spec = replace(lane.spec, max_new_tokens=3)
    inserted = []
    monkeypatch.setattr(type(window.state), "insert_lane", lambda *args, **kwargs: inserted.append(args))
    names = [lane.name for lane in window.state.lanes]
    window.text.request_replay(index, step)
    wait_idle(qtbot, window)
    assert inserted == [] and window.state.job is None
    assert [lane.name for lane in window.state.lanes] == names and len(window.text.columns) == len(names)
    text = window.state.notice.text
    assert "max_new_tokens=3" in text and "ValueError" not in text, text


def test_a_branch_the_engine_would_refuse_is_refused_before_any_lane_appears(qtbot, window, monkeypatch):
    run_and_wait(qtbot, window, max_new_tokens=16)
    lane = window.state.lanes[0]
    lane.spec = replace(lane.spec, max_new_tokens=3)  # the branch lane takes the parent's strategy
    window.state.request = replace(window.state.request, branch_strategy="")
    inserted = []
    monkeypatch.setattr(type(window.state), "insert_lane", lambda *args, **kwargs: inserted.append(args))
    window.text.request_branch(0, 8, lane.trace.steps[8].top[1].id)
    wait_idle(qtbot, window)
    assert inserted == [] and window.state.job is None
    assert "max_new_tokens=3" in window.state.notice.text, window.state.notice.text
