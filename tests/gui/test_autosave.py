"""Nothing lost: the window autosaves its run while it streams and when it changes; a clean exit leaves nothing;
after a crash (here a real kill -9 of a real app process, mid-run) the next start offers the run back, and
"no" discards it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from decoding.records import jsonio
from gui.shell.autosaver import autosave_folder
from runfiles import autosave, run_file
from tests.gui_helpers import run_and_wait

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def own_state_folder(monkeypatch, tmp_path):
    """Each test's autosaves in a folder of its own: the session's shared one may hold what other tests' child
    processes left, which a restore would rightly offer too."""
    monkeypatch.setenv("BRANCHPOINT_STATE_DIR", str(tmp_path / "own-state"))


def _orphan_of(path: Path) -> Path:
    """The autosave as a crashed instance would have left it: under a pid that no longer runs."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    orphan = path.with_name(f"autosave-{dead}.json")
    orphan.write_bytes(path.read_bytes())
    return orphan


def test_the_run_is_autosaved_and_a_clean_exit_leaves_nothing(qtbot, make_window, tiny_model_dir):
    window = make_window(tiny_model_dir)
    run_and_wait(qtbot, window, max_new_tokens=8)
    window.autosaver.flush()  # the final state was queued when the run ended: no timer left to wait for
    saved = run_file.load(window.autosaver.path)
    assert jsonio.dumps(saved) == jsonio.dumps(window.state.autosave_trace())
    assert [lane.token_ids for lane in saved.lanes] == [lane.token_ids for lane in window.trace.lanes]
    assert all(lane.finish_reason is not None for lane in saved.lanes)
    path = window.autosaver.path
    window.shutdown()
    assert not path.exists()


def test_restore_offers_the_run_a_crashed_instance_left_and_no_discards_it(qtbot, make_window, tiny_model_dir):
    window = make_window(tiny_model_dir)
    run_and_wait(qtbot, window, max_new_tokens=8)
    window.autosaver.flush()
    orphan = _orphan_of(window.autosaver.path)
    tokens = [lane.token_ids for lane in window.trace.lanes]
    fresh = make_window(None)
    asked = []
    assert not fresh.offer_restore(ask=lambda path: asked.append(path) or False)
    assert asked == [orphan] and not orphan.exists()  # "no" discards it
    orphan = _orphan_of(window.autosaver.path)
    again = make_window(None)
    assert again.offer_restore(ask=lambda path: True)
    assert [lane.token_ids for lane in again.trace.lanes] == tokens
    assert again.state.notice.level == "info" and "Restored" in again.state.notice.text
    assert again.prompt.editor.toPlainText() == window.prompt.editor.toPlainText()
    assert not orphan.exists() and again.autosaver.path.is_file()  # claimed: a crash now loses nothing either


def test_the_final_state_is_written_even_while_a_slow_write_is_on_its_way(qtbot, make_window, tiny_model_dir):
    """A busy disk: every write takes 0.3 s, streaming writes start every 10 ms, so when the run ends a write of
    an unfinished run is still on its way. The end of the run must be queued behind it, not left to a timer."""
    window = make_window(tiny_model_dir)
    saver = window.autosaver
    write = saver.store.write

    def slow_write(trace):
        time.sleep(0.3)
        return write(trace)

    saver.store.write = slow_write
    saver._streaming.setInterval(10)
    run_and_wait(qtbot, window, max_new_tokens=24)
    saver.flush()
    saved = run_file.load(saver.path)
    assert all(lane.finish_reason is not None for lane in saved.lanes)
    assert [lane.token_ids for lane in saved.lanes] == [lane.token_ids for lane in window.trace.lanes]


def test_an_unwritable_autosave_folder_is_said_and_the_run_stays(qtbot, make_window, tiny_model_dir, tmp_path):
    window = make_window(tiny_model_dir)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the folder should be")
    window.autosaver.store = autosave.Autosave(blocker / "autosave")
    run_and_wait(qtbot, window, max_new_tokens=6)
    qtbot.waitUntil(lambda: window.state.notice is not None and window.state.notice.cause == "autosave",
                    timeout=5000)
    assert "Autosave failed" in window.state.notice.text and all(lane.steps for lane in window.trace.lanes)


def test_a_real_app_killed_mid_run_is_restored(qtbot, make_window, tiny_model_dir, tmp_path):
    state = tmp_path / "state"
    env = {**os.environ, "BRANCHPOINT_STATE_DIR": str(state), "BRANCHPOINT_AUTOSAVE_MS": "200",
           "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    app = subprocess.Popen(
        [sys.executable, str(ROOT / "main.py"), "--gui-model", str(tiny_model_dir), "--gui-prompt",
         "Once upon a time", "--gui-max-new-tokens", "480", "--gui-run"], env=env, cwd=ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    folder = state / "autosave"
    path = folder / f"autosave-{app.pid}.json"
    deadline = time.monotonic() + 120
    streamed = None
    try:
        while time.monotonic() < deadline and app.poll() is None:
            if path.is_file():
                data = json.loads(path.read_text())
                lanes = data["lanes"]
                if len(lanes) == 5 and all(lane["finish_reason"] is None and lane["steps"] for lane in lanes):
                    streamed = data  # an autosave of the run while it streams, all 5 lanes under way (one
                    # written mid-step holds only the lanes that have a record yet)
                    break
            time.sleep(0.05)
        assert streamed is not None, app.stderr.read().decode() if app.poll() is not None else "no autosave"
        app.send_signal(signal.SIGKILL)
        app.wait(30)
    finally:
        if app.poll() is None:
            app.kill()
    assert autosave.orphans(folder) == [path]
    os.environ["BRANCHPOINT_STATE_DIR"], previous = str(state), os.environ["BRANCHPOINT_STATE_DIR"]
    try:
        assert autosave_folder() == folder
        window = make_window(None)
        assert window.offer_restore(ask=lambda found: True)
    finally:
        os.environ["BRANCHPOINT_STATE_DIR"] = previous
    lanes = window.trace.lanes
    assert len(lanes) == 5 and all(lane.steps for lane in lanes)
    assert all(lane.token_ids == [s.token_id for s in lane.steps] for lane in lanes)
    assert not path.exists()
