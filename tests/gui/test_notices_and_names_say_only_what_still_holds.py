"""Issue 33, items 3 and 8, as a new user met them (tiny model, real widgets): a notice goes once what it says no
longer holds — "Select a token…" once a token is selected, step mode's refusal once step mode runs, "Restored the
run…" with the next run, a notice naming a lane with that lane; a branch lane that became an ordinary lane loses
its branch name ("greedy ↳3"); the lanes editor stays on the lane the user chose when a branch is inserted above
it; the tour's replay leaves the user's seed setting alone; the model picker gives an inspection model's size apart."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from gui.present.variant_rows import human_size, model_line
from models.catalog import model_info
from runfiles import run_file
from tests.decoding.test_jsonio import fake_trace
from tests.gui_helpers import run_and_wait, wait_idle

GREEDY, BEAM, TOP_K, TOP_P = 0, 1, 2, 3


def notice(window) -> str:
    return window.state.notice.text if window.state.notice is not None else ""


def test_notices_go_when_what_they_say_no_longer_holds(qtbot, window, tmp_path, monkeypatch):
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    run_and_wait(qtbot, window, max_new_tokens=8)
    window.state._set_selection(None)
    window.commands.explain_selected_lane()
    assert notice(window).startswith("Select a token of the lane to explain") and window.error_banner.isVisible()
    window.state.select(TOP_K, 2)  # the user does as told
    assert notice(window) == "" and not window.error_banner.isVisible()

    # step mode refused while a branch lane exists; once it runs, its refusal is gone
    window.controller.branch(GREEDY, 3, window.state.lanes[GREEDY].trace.steps[3].top[1].id)
    wait_idle(qtbot, window)
    qtbot.keyClick(window, Qt.Key.Key_F6)
    assert notice(window).startswith("Step mode starts every lane at step 0")
    window.controller.undo_branch()
    qtbot.keyClick(window, Qt.Key.Key_F6)
    wait_idle(qtbot, window)
    assert window.controller.step_mode and notice(window) == ""
    qtbot.keyClick(window, Qt.Key.Key_F6)  # off again

    # "Restored the run…" is about the restored run: the next run makes it untrue
    restorable = tmp_path / "autosave.json"
    run_file.save(fake_trace(), restorable)
    monkeypatch.setattr("gui.shell.restore.restorable", lambda: [restorable])
    monkeypatch.setattr(window.autosaver.store, "claim", lambda path: path)
    assert window.offer_restore(ask=lambda _path: True)
    assert notice(window).startswith("Restored the run")
    window.state.set_specs([lane.spec for lane in window.state.lanes][:0] or window.state.specs)
    run_and_wait(qtbot, window, max_new_tokens=4)
    assert not notice(window).startswith("Restored the run")

    # a notice that names a lane goes with the lane
    window.lanes._select_row(TOP_P)
    window.lanes.fanout.setValue(4)
    run_and_wait(qtbot, window, max_new_tokens=4)
    name = window.state.lanes[TOP_P].name
    window.controller.branch(TOP_P, 1, window.state.lanes[TOP_P].trace.steps[1].top[1].id)
    assert f"“{name}” runs as a fan-out" in notice(window)
    window.lanes._select_row(TOP_P)
    window.lanes.remove_selected()
    assert notice(window) == "" and not window.error_banner.isVisible()


def test_a_detached_branch_is_named_by_its_strategy_and_the_editor_keeps_the_chosen_lane(qtbot, window):
    run_and_wait(qtbot, window, max_new_tokens=8)
    editor = window.lanes
    editor._select_row(TOP_P)  # the user edits top-p 0.9 (no step selected)
    window.state._set_selection(None)
    chosen = window.state.lanes[TOP_P]
    window.controller.branch(GREEDY, 3, window.state.lanes[GREEDY].trace.steps[3].top[1].id)  # inserted above it
    wait_idle(qtbot, window)
    assert window.state.lanes[GREEDY + 1].name == "greedy ↳3"
    assert editor.selected_index() == window.state.lanes.index(chosen) == TOP_P + 1
    assert editor.form.widgets["top_p"].value() == 0.9 and editor.table.item(TOP_P + 1, 0).text() == "top-p 0.9"
    # with a step of it selected too
    window.state.select(TOP_P + 1, 2)
    window.controller.branch(GREEDY, 2, window.state.lanes[GREEDY].trace.steps[2].top[1].id)
    wait_idle(qtbot, window)
    assert window.state.lanes[editor.selected_index()] is chosen

    # a new prompt: the branch points no longer hold, the lanes run as ordinary ones, named by their strategy
    window.prompt.editor.setPlainText("A different prompt")
    run_and_wait(qtbot, window, max_new_tokens=8)
    names = [lane.name for lane in window.state.lanes]
    assert not any("↳" in name for name in names), names
    assert names[:3] == ["greedy", "greedy (2)", "greedy (3)"]
    assert "ordinary lanes" in notice(window) and "greedy ↳3" in notice(window)  # the notice says which they were
    assert [window.text.columns[i].title.text().count("↳") for i in range(3)] == [0, 0, 0]
    assert [editor.table.item(row, 0).text() for row in range(3)] == names[:3]


def test_the_tours_replay_leaves_the_users_seed_alone(qtbot, window):
    window.prompt.seed.clear()  # auto, the user's own choice
    window.unsaved.ask_before_run = False
    window.tour.start("determinism")  # its after-action replays the run with the run's seeds
    qtbot.waitUntil(lambda: window.state.job is not None, timeout=10_000)
    wait_idle(qtbot, window)
    qtbot.wait(100)
    wait_idle(qtbot, window)
    assert window.state.request.seed is None and window.prompt.seed.text() in ("", "auto")


def test_the_model_picker_gives_the_inspection_models_size_apart(tiny_model_dir, tmp_path):
    def files_of_the_model(name):  # the shared fixture may already hold an inspection graph from an earlier test
        folder = tmp_path / name
        folder.mkdir()
        for item in tiny_model_dir.iterdir():
            if item.is_file():
                (folder / item.name).symlink_to(item)
        return folder

    alone = model_line(model_info(files_of_the_model("alone")))
    copy = files_of_the_model("copy")
    (copy / "inspection").mkdir()
    (copy / "inspection" / "model.onnx").write_bytes(b"\0" * 2_000_000)
    line = model_line(model_info(copy))
    assert line.endswith(" + 2 MB inspection"), line
    assert "inspection" not in alone, alone
    assert alone.rsplit(" · ", 1)[1] == human_size(model_info(copy).size_bytes - 2_000_000)
