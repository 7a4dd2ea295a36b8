"""Paths a user takes that only a fake or a shortcut covered before: an over-long prompt typed into the real
window (its real ModelHolder reads the model's config.json); the start-up restore question asked by the real
entry (main.main, in a child process) and answered with a click, for a good autosave and a damaged one; a
damaged run file that is still accepted, opened in the real widgets and looked at step by step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import Qt

from decoding.records import jsonio
from runfiles import run_file
from tests.decoding.test_jsonio import fake_trace
from tests.gui_helpers import run_and_wait
from tests.reliability.test_fuzz import damaged

REPO = Path(__file__).resolve().parents[2]


def test_an_over_long_prompt_typed_into_the_window_is_refused_before_any_model_work(qtbot, window):
    holder = window.controller.holder
    assert holder.max_positions() == 512  # the tiny model's config.json: max_position_embeddings
    window.prompt.editor.setPlainText("1234567890" * 52)  # one token a digit: 520 tokens
    window.prompt.editor.moveCursor(window.prompt.editor.textCursor().MoveOperation.End)
    qtbot.keyClicks(window.prompt.editor, " 42")
    window.prompt.max_new_tokens.setValue(8)
    qtbot.mouseClick(window.prompt.run_button, Qt.MouseButton.LeftButton)
    notice = window.state.notice
    assert notice is not None and notice.cause == "prompt", notice
    assert "longer than the model's 512 positions" in notice.text and "Cannot run" in notice.text
    assert not window.worker.is_running() and window.prompt.run_button.isEnabled()
    assert all(not lane.trace.steps for lane in window.state.lanes)
    window.prompt.editor.setPlainText("1234567890" * 49)  # 490 tokens + 8 new: fits
    assert window.state.notice is None  # editing the prompt clears what it caused
    run_and_wait(qtbot, window, max_new_tokens=8)
    assert window.state.notice is None and all(lane.trace.steps for lane in window.state.lanes)


ENTRY = """
import json, sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox
import main
from gui.app import make_application

app = make_application([])
seen = {"tries": 0}

def answer_the_question():
    box = QApplication.activeModalWidget()
    seen["tries"] += 1
    if not isinstance(box, QMessageBox):
        if seen["tries"] < 200:
            QTimer.singleShot(50, answer_the_question)
        else:
            look_and_quit()  # never asked
        return
    seen["question"] = box.windowTitle()
    box.button(QMessageBox.StandardButton.Yes).click()
    QTimer.singleShot(200, look_and_quit)

def look_and_quit():
    windows = [w for w in QApplication.topLevelWidgets() if type(w).__name__ == "MainWindow"]
    for window in windows:
        notice = window.state.notice
        seen.update(notice=notice.text if notice else None, lanes=[lane.name for lane in window.state.lanes],
                    tokens=[lane.trace.token_ids for lane in window.state.lanes],
                    prompt=window.prompt.editor.toPlainText())
        window.shutdown()
    app.quit()

QTimer.singleShot(0, answer_the_question)
seen["returned"] = main.main(sys.argv[1:])
print(json.dumps(seen))
"""


def start_the_app_over(autosave_text: str, state: Path, model_dir: Path) -> tuple[dict, Path]:
    """Start the real app with an autosave a killed instance left (`autosave_text`), answer its question Yes,
    and say what the window showed."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    orphan = state / "autosave" / f"autosave-{dead}.json"
    orphan.parent.mkdir(parents=True)
    orphan.write_text(autosave_text, encoding="utf-8")
    env = {**os.environ, "BRANCHPOINT_STATE_DIR": str(state), "BRANCHPOINT_CONFIG_DIR": str(state / "config"),
           "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(REPO)}  # settings of its own: the default lanes
    done = subprocess.run([sys.executable, "-c", ENTRY, "--gui-model", str(model_dir)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), orphan


def test_the_app_asks_at_start_and_restores_the_run_a_killed_instance_left(tiny_model_dir, tmp_path):
    trace = fake_trace()
    seen, orphan = start_the_app_over(jsonio.dumps(trace), tmp_path / "state", tiny_model_dir)
    assert seen["question"] == "Restore the last run?" and seen["returned"] == 0
    assert seen["lanes"] == [lane.name for lane in trace.lanes]
    assert seen["tokens"] == [lane.token_ids for lane in trace.lanes]
    assert seen["prompt"] == trace.prompt.text and "Restored" in seen["notice"]
    assert not orphan.exists()  # claimed, and discarded at the clean exit


def test_a_damaged_autosave_at_start_is_said_and_the_app_runs_on(tiny_model_dir, tmp_path):
    text = jsonio.dumps(fake_trace())
    seen, orphan = start_the_app_over(text[: len(text) // 2], tmp_path / "state", tiny_model_dir)  # cut by a crash
    assert seen["question"] == "Restore the last run?" and seen["returned"] == 0
    assert seen["notice"].startswith("Could not restore the autosaved run:") and "not JSON" in seen["notice"]
    assert seen["lanes"] == ["greedy", "beam-4", "top-k 50", "top-p 0.9", "T 1.3"]  # the default lanes, ready


def damaged_but_accepted(trace_text: str) -> str:
    """A run file with what a hand edit or another tool leaves and loading still accepts: a lane without steps,
    an empty top list, probabilities of 0 and 1, a huge entropy, a long name, control characters, a beam step
    without candidates, no analysis."""
    data = json.loads(trace_text)
    data["analysis"] = None
    lanes = data["lanes"]
    lanes[0]["name"] = "g" * 300 + "\u0007\t"
    first = lanes[2]["steps"][0]
    first.update(top=[], prob=1.0, entropy=1e9, token_text="\u0000\u202e\n")
    lanes[3]["steps"][1].update(prob=0.0, logprob=None, margin=-1.0, kept=0)
    lanes[1]["steps"][0]["beams"] = []
    lanes[4].update(token_ids=[], steps=[], text="", finish_reason=None)
    return json.dumps(data)


def test_a_damaged_but_accepted_run_file_opens_in_the_real_widgets(qtbot, window, tmp_path):
    path = tmp_path / "damaged.json"
    path.write_text(damaged_but_accepted(jsonio.dumps(fake_trace())), encoding="utf-8")
    run_file.load(path)  # accepted
    window.files.open(path)
    assert window.state.notice is None or window.state.notice.level == "info", window.state.notice
    assert len(window.state.lanes) == 6
    for lane_index, lane in enumerate(window.state.lanes):  # every step looked at, in every view
        for step in range(len(lane.trace.steps)):
            assert window.state.select(lane_index, step)
            qtbot.wait(1)
    for index in range(window.charts.count()):
        window.charts.setCurrentIndex(index)
        qtbot.wait(40)
    window.grab()  # everything drawn once more
    assert not window.error_banner.isVisible()


A_RUN = jsonio.dumps(fake_trace())  # one text for every example (a run's timings differ from run to run)


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])
@given(data=st.data())
def test_any_damaged_run_file_that_is_accepted_opens_in_the_real_widgets(qtbot, window, tmp_path, data):
    """The run-file fuzz's damage (values replaced or retyped, keys and items dropped), kept when loading
    accepts it, opened with the window's Open; every step selected, every chart tab shown."""
    text = data.draw(damaged(A_RUN))
    try:
        jsonio.loads(text)
    except jsonio.TraceFormatError:
        assume(False)
    path = tmp_path / "damaged.json"
    path.write_text(text, encoding="utf-8")
    window.files.open(path)
    for lane_index, lane in enumerate(window.state.lanes):
        for step in range(len(lane.trace.steps)):
            window.state.select(lane_index, step)
    for index in range(window.charts.count()):
        window.charts.setCurrentIndex(index)
        qtbot.wait(5)
    window.grab()
    assert not window.error_banner.isVisible()


def test_a_run_file_with_a_far_beam_slot_draws_its_beam_tree(qtbot, window, tmp_path):
    """The fuzz found it: a beam's parent slot damaged to 36 million is accepted, and the beam tree's y axis (its
    edge goes to that slot), once ticked at every whole slot, asked numpy for petabytes while painting. Whole
    ticks now space out as the range allows."""
    data = json.loads(A_RUN)
    beam_lane = next(lane for lane in data["lanes"] if any(step.get("beams") for step in lane["steps"]))
    beam_lane["steps"][1]["beams"][0]["parent"] = 36_482_597
    path = tmp_path / "far-slot.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    run_file.load(path)  # accepted
    window.files.open(path)
    window.state.select(data["lanes"].index(beam_lane), 1)
    window.charts.setCurrentWidget(window.beam_tree)
    qtbot.wait(40)
    window.grab()
    assert not window.error_banner.isVisible()
