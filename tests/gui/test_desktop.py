"""The window as a desktop app: settings kept between starts (every item), Reset layout, a corrupt settings file,
menus and keys, recent files, dropped run files, "Save changes?", generation configs in the lane editor, About.
Real widgets, real QSettings files, real run files; the tiny exported model where a run is needed."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QFileDialog, QSplitter

from decoding.chain.spec import LaneSpec
from decoding.records import jsonio
from gui.app import make_application
from gui.main_window import MainWindow
from gui.shell import unsaved
from gui.shell.settings import DEFAULT_SIZE, Settings, apply_layout, capture_layout, named_splitters
from runfiles import run_file
from tests.decoding.test_jsonio import fake_trace

RUN_TIMEOUT_MS = 60_000


@pytest.fixture
def make_window(qtbot):
    """Windows (with a settings file when given one) that are always shut down at teardown."""
    make_application([])
    windows: list[MainWindow] = []

    def make(model_dir: Path | None = None, settings: Settings | None = None) -> MainWindow:
        window = MainWindow(model_dir, settings)
        window.prompt.seed.setValue(1)
        qtbot.addWidget(window)
        window.show()
        qtbot.waitExposed(window)
        qtbot.wait(20)  # layouts settle
        windows.append(window)
        return window

    yield make
    for window in windows:
        window.theme.set_mode("system")
        window.shutdown()
        window.deleteLater()  # Qt deletes it now: Python would keep it until exit, and pyqtgraph's items with it
    windows.clear()
    qtbot.wait(10)
    gc.collect()  # their reference cycles go here, on the GUI thread, not in a later test's worker thread


@pytest.fixture
def saved_run(tmp_path) -> Path:
    """A run file made without a model (the engine on a fake logits source)."""
    return run_file.save(fake_trace(), tmp_path / "saved run.json")


@pytest.fixture
def no_file_dialogs(monkeypatch):
    """File dialogs answer "cancelled" at once (a real one would wait for a click)."""
    for name in ("getOpenFileName", "getSaveFileName"):
        monkeypatch.setattr(QFileDialog, name, staticmethod(lambda *_a, **_k: ("", "")))
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *_a, **_k: ""))
    monkeypatch.setattr(QFileDialog, "exec", lambda _dialog: 0)


def run_and_wait(qtbot, window: MainWindow, max_new_tokens: int = 6) -> None:
    window.prompt.max_new_tokens.setValue(max_new_tokens)
    window.commands.run()
    qtbot.waitUntil(lambda: not window.worker.is_running() and window.prompt.run_button.isEnabled(),
                    timeout=RUN_TIMEOUT_MS)


# ------------------------------------------------------------------------------------------------ settings


def test_every_setting_survives_a_restart(qtbot, make_window, tiny_model_dir, tmp_path):
    path = tmp_path / "branchpoint.ini"
    first = make_window(tiny_model_dir, Settings(path))
    first.resize(1100, 700)
    assert set(named_splitters(first)) == {"mainSplitter", "rightSplitter", "bottomSplitter", "laneSplitter",
                                           "inspectorSplitter"}
    named_splitters(first)["mainSplitter"].setSizes([420, 680])
    named_splitters(first)["rightSplitter"].setSizes([300, 400])
    first.lanes.add_spec(LaneSpec("my lane", do_sample=True, top_p=0.8, temperature=0.6))
    first.state.set_fanout(len(first.state.lanes) - 1, 4)
    first.prompt.editor.setPlainText("我虽然很累，但还是决定")
    first.prompt.chat.setChecked(True)
    first.prompt.system.setText("You are terse.")
    first.prompt.max_new_tokens.setValue(77)
    first.controller.set_device("cpu")
    first.charts.setCurrentIndex(1)
    first.timeline.set_metric("entropy")
    first.timeline.set_layout("strips")
    first.inspector.set_overlay(True)
    first.branch_strategy.setCurrentIndex(first.branch_strategy.findData("Top-p 0.9"))
    first.theme.set_mode("dark")
    first.menus.choice_actions("&Language")["zh_CN"].trigger()
    first.recent.add(tmp_path / "a.json")
    first.unsaved.ask_before_run = False
    lanes = [(lane.name, lane.spec, lane.named_by_user, lane.fanout) for lane in first.state.lanes]
    qtbot.wait(20)
    moved = {name: s.sizes() for name, s in named_splitters(first).items()}
    first.close()
    assert path.is_file()
    first.theme.set_mode("system")  # the next window must get "dark" from the file, not from the app

    second = make_window(Settings(path).model_path(), Settings(path))
    assert (second.width(), second.height()) == (1100, 700)
    assert {name: s.sizes() for name, s in named_splitters(second).items()} == moved
    assert [(lane.name, lane.spec, lane.named_by_user, lane.fanout) for lane in second.state.lanes] == lanes
    assert second.state.lanes[-1].fanout == 4
    assert second.state.lanes[-1].named_by_user  # "my lane" keeps its name when its parameters change
    assert second.prompt.editor.toPlainText() == "我虽然很累，但还是决定"
    assert second.prompt.chat.isChecked() and second.prompt.system.text() == "You are terse."
    assert second.prompt.max_new_tokens.value() == 77
    assert second.controller.holder.path == tiny_model_dir and second.controller.device == "cpu"
    assert second.controller.holder.device == "cpu"
    assert second.charts.currentIndex() == 1 and second.timeline.current_metric() == "entropy"
    assert second.timeline.view_state().layout == "strips"
    assert second.inspector.is_overlay() and second.branch_strategy.currentData() == "Top-p 0.9"
    assert second.theme.mode == "dark" and second.theme.is_dark()
    assert second.chrome.language == "zh_CN" and Settings(path).choice("view/language", ("system",)) != ""
    assert second.recent.paths == [(tmp_path / "a.json").resolve()]
    assert not second.unsaved.ask_before_run
    assert not second.error_banner.isVisible()  # nothing failed to read


def test_branch_lanes_and_forced_tokens_are_not_kept(qtbot, make_window, tmp_path):
    from decoding.chain.spec import Branch

    path = tmp_path / "branchpoint.ini"
    first = make_window(None, Settings(path))
    first.state.set_specs([LaneSpec("greedy", forced={2: 5}), LaneSpec("b", branch=Branch("greedy", 1, 3))])
    first.close()
    second = make_window(None, Settings(path))
    assert [lane.spec for lane in second.state.lanes] == [LaneSpec("greedy")]


def test_reset_layout_brings_back_the_first_start_layout(qtbot, make_window, tmp_path):
    path = tmp_path / "branchpoint.ini"
    window = make_window(None, Settings(path))
    default = {name: s.sizes() for name, s in named_splitters(window).items()}
    window.resize(900, 600)
    named_splitters(window)["bottomSplitter"].setSizes([100, 900])
    named_splitters(window)["mainSplitter"].setSizes([600, 400])
    window.window_actions["reset_layout"].trigger()
    qtbot.wait(50)
    assert (window.width(), window.height()) == DEFAULT_SIZE
    assert_sizes_as(named_splitters(window), default)
    window.close()
    again = make_window(None, Settings(path))
    assert_sizes_as(named_splitters(again), default)


def assert_sizes_as(splitters: dict, default: dict) -> None:
    """The window's dividers exactly as at the first start; the inspector's (inside a panel the others size) to
    the pixel its rounding allows."""
    sizes = {name: s.sizes() for name, s in splitters.items()}
    assert sizes.keys() == default.keys()
    for name, expected in default.items():
        slack = 2 if name == "inspectorSplitter" else 0
        assert all(abs(a - b) <= slack for a, b in zip(sizes[name], expected, strict=True)), (name, sizes[name])


@pytest.mark.parametrize("content", [b"\x00\xff\xfe garbage \x01\x02", b"[General]\nlanes=@ByteArray(\nx\n[window\n"])
def test_a_corrupt_settings_file_is_set_aside_with_one_line_notice(qtbot, make_window, tmp_path, content):
    path = tmp_path / "branchpoint.ini"
    path.write_bytes(content)
    window = make_window(None, Settings(path))
    assert window.error_banner.isVisible() and "could not be read" in window.error_banner.text()
    assert "\n" not in window.error_banner.text()
    assert (tmp_path / "branchpoint.ini.unreadable").read_bytes() == content
    assert [lane.name for lane in window.state.lanes] == ["greedy", "beam-4", "top-k 50", "top-p 0.9", "T 1.3"]
    window.close()
    assert Settings(path).notice == ""  # the new file is fine


def test_an_unreadable_value_leaves_that_item_at_its_default(qtbot, make_window, tmp_path):
    path = tmp_path / "branchpoint.ini"
    path.write_text('[prompt]\nmax_new_tokens=lots\ntext=kept\n[General]\nlanes="[{""name"": 1}]"\n',
                    encoding="utf-8")
    window = make_window(None, Settings(path))
    assert window.prompt.editor.toPlainText() == "kept" and window.prompt.max_new_tokens.value() == 64
    notice = window.error_banner.text()
    assert "prompt/max_new_tokens" in notice and "lanes" in notice and len(window.state.lanes) == 5


# --------------------------------------------------------------------------------------------- menus, keys


def test_menus_hold_every_command(qtbot, make_window):
    window = make_window()
    titles = [action.text().replace("&", "") for action in window.menuBar().actions()]
    assert titles == ["File", "Run", "Lanes", "View", "Help"]
    menus = window.menus

    def entries(menu):
        return [a.text().replace("&", "") for a in menu.actions() if not a.isSeparator()]

    assert entries(menus.file)[:4] == ["Open…", "Open Recent", "Save…", "Export images…"]
    assert entries(menus.file)[-1] == "Quit"
    assert entries(menus.run)[:4] == ["Run all lanes", "Stop", "Replay", "Run again and compare"]
    assert "Add lane (greedy)" in entries(menus.lanes) and "Duplicate selected lane" in entries(menus.lanes)
    assert entries(menus.help) == ["Keyboard shortcuts", "Tour", "About Branchpoint"]
    assert window.window_actions["tour"] in menus.help.actions() and window.window_actions["tour"].isEnabled()
    assert "Critical-point thresholds…" in entries(menus.run)
    assert window.window_actions["run_again_and_compare"].isEnabled()


def press(qtbot, widget, key, modifier=Qt.KeyboardModifier.NoModifier) -> None:
    widget.setFocus()
    qtbot.keyClick(widget, key, modifier)


def test_shortcuts_trigger_their_actions(qtbot, make_window, saved_run, no_file_dialogs):
    window = make_window()
    window.activateWindow()
    fired: list[str] = []
    named = {name: window.window_actions[action_id] for name, action_id in (
        ("open", "open"), ("save", "save"), ("export", "export"), ("undo", "undo_branch"), ("run", "run"),
        ("stop", "stop"), ("shortcuts", "shortcuts"), ("add lane", "add_lane"), ("quit", "quit"))}
    for name, action in named.items():
        action.triggered.connect(lambda _checked=False, n=name: fired.append(n))
    ctrl, shift = Qt.KeyboardModifier.ControlModifier, Qt.KeyboardModifier.ShiftModifier
    editor = window.prompt.editor
    lanes = len(window.state.lanes)
    table = window.lanes.table
    press(qtbot, editor, Qt.Key.Key_O, ctrl)
    press(qtbot, editor, Qt.Key.Key_S, ctrl)
    press(qtbot, editor, Qt.Key.Key_E, ctrl | shift)
    press(qtbot, table, Qt.Key.Key_Z, ctrl)  # (in the prompt editor Ctrl+Z undoes typing)
    press(qtbot, editor, Qt.Key.Key_L, ctrl)
    press(qtbot, editor, Qt.Key.Key_Return, ctrl)
    press(qtbot, editor, Qt.Key.Key_Escape)
    press(qtbot, table, Qt.Key.Key_F1)
    assert fired == ["open", "save", "export", "undo", "add lane", "run", "stop", "shortcuts"]
    assert len(window.state.lanes) == lanes + 1 and window.state.lanes[-1].spec.name.startswith("greedy")
    dialog = window.chrome.dialogs[-1]
    assert dialog.isVisible() and ("Ctrl+L", "Add lane (greedy)") in dialog.rows()
    assert ("Up", "Previous lane") in dialog.rows() and ("F1", "Keyboard shortcuts") in dialog.rows()
    dialog.close()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)

    window.files.open(saved_run)  # steps to move through, no model needed
    browser = window.text.columns[0].browser
    window.state.select(0, 3)
    press(qtbot, browser, Qt.Key.Key_Down)
    assert (window.state.selection.lane, window.state.selection.step) == (1, 3)
    assert QApplication.focusWidget() is window.text.columns[1].browser  # Left/Right go on in the new lane
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Right)
    assert (window.state.selection.lane, window.state.selection.step) == (1, 4)
    press(qtbot, window.timeline, Qt.Key.Key_Up)
    assert (window.state.selection.lane, window.state.selection.step) == (0, 4)
    spin = window.prompt.max_new_tokens
    before = spin.value()
    spin.setFocus()  # elsewhere the arrow keys are the widget's own
    qtbot.keyClick(spin, Qt.Key.Key_Up)
    assert spin.value() == before + 1 and window.state.selection.lane == 0
    press(qtbot, editor, Qt.Key.Key_Q, ctrl)
    assert fired[-1] == "quit" and not window.isVisible()


def test_right_click_on_a_mark_shows_the_lanes_actions(qtbot, make_window, saved_run):
    """The ◆ before a token: its branch / force menu, not the text widget's own ("Copy Link Location")."""
    from PySide6.QtCore import QTimer
    from PySide6.QtGui import QContextMenuEvent, QTextCursor

    window = make_window()
    window.files.open(saved_run)
    lane = next(i for i in range(len(window.state.lanes)) if window.state.divergence_step(i) is not None)
    browser = window.text.columns[lane].browser
    cursor = QTextCursor(browser.document())
    cursor.setPosition(browser.toPlainText().index("◆"))
    point = browser.cursorRect(cursor).center() + QPoint(2, 0)
    shown = []

    def read_and_close_menu():
        menu = QApplication.activePopupWidget()
        shown.append([a.text() for a in menu.actions() if not a.isSeparator()] if menu else None)
        if menu:
            menu.close()

    QTimer.singleShot(100, read_and_close_menu)
    QApplication.sendEvent(browser.viewport(), QContextMenuEvent(QContextMenuEvent.Reason.Mouse, point,
                                                                 browser.viewport().mapToGlobal(point)))
    assert shown and shown[0][:2] == ["Branch from here with…", "Force for all lanes…"]
    assert not any("Link" in entry for entry in shown[0])


# ------------------------------------------------------------------------------------------------- files


def test_recent_files_keep_the_last_ten_newest_first(qtbot, make_window, tmp_path):
    path = tmp_path / "branchpoint.ini"
    window = make_window(None, Settings(path))
    runs = [run_file.save(fake_trace(), tmp_path / f"run{i}.json") for i in range(12)]
    for run in runs:
        assert window.files.open(run)
    assert window.recent.paths == [r.resolve() for r in reversed(runs[2:])]
    menu = window.chrome.recent_menu
    menu.fill()
    entries = [a for a in menu.actions() if a.data()]
    assert [a.data() for a in entries] == [str(r.resolve()) for r in reversed(runs[2:])]
    assert entries[0].text() == "&1 run11.json" and entries[9].text() == "&0 run2.json"
    entries[3].trigger()  # run8
    assert window.recent.paths[0] == runs[8].resolve()
    assert Settings(path).strings("files/recent")[0] == str(runs[8].resolve())  # stored at once
    runs[5].unlink()
    next(a for a in menu.actions() if a.data() == str(runs[5].resolve())).trigger()
    assert runs[5].resolve() not in window.recent.paths and "Could not open" in window.error_banner.text()


def drop(widget, path: Path) -> bool:
    """A file manager's drag of `path` entering and dropping onto `widget`; whether the drop was taken."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    point = QPointF(widget.width() / 2, widget.height() / 2)
    actions = Qt.DropAction.CopyAction
    buttons, modifiers = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    enter = QDragEnterEvent(point.toPoint(), actions, mime, buttons, modifiers)
    QApplication.sendEvent(widget, enter)
    event = QDropEvent(point, actions, mime, buttons, modifiers)
    QApplication.sendEvent(widget, event)
    return enter.isAccepted() and event.isAccepted()


def test_a_run_file_dropped_anywhere_opens(qtbot, make_window, saved_run, tmp_path):
    window = make_window()
    trace = run_file.load(saved_run)
    targets = [window, window.prompt.editor.viewport()]
    for target in targets:
        window.state.set_specs([LaneSpec("greedy")])
        assert drop(target, saved_run)
        assert [lane.name for lane in window.state.lanes] == [lane.name for lane in trace.lanes]
    assert window.prompt.editor.toPlainText() == trace.prompt.text  # the file's prompt, no path typed in
    views = [window.text.columns[0].browser.viewport(), window.timeline, window.inspector, window.beam_tree]
    assert not any(view.acceptDrops() for view in views)  # they let the drag through to the window
    other = tmp_path / "notes.txt"
    other.write_text("x")
    assert not drop(window, other)


def test_newer_run_files_are_refused_with_a_clear_message(qtbot, make_window, tmp_path):
    data = jsonio.to_dict(fake_trace())
    data["schema_version"] += 1
    path = tmp_path / "future.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    window = make_window()
    assert not window.files.open(path)
    assert "saved by a newer Branchpoint. Update Branchpoint to open it." in window.error_banner.text()


def test_save_changes_is_asked_before_an_unsaved_run_is_replaced(qtbot, make_window, tiny_model_dir, saved_run,
                                                                 monkeypatch, tmp_path):
    asked: list[str] = []
    answers = iter([])

    def answer(_parent, before, offer_dont_ask):
        asked.append(before)
        return next(answers)

    monkeypatch.setattr(unsaved, "ask_to_save", answer)
    window = make_window(tiny_model_dir)
    run_and_wait(qtbot, window)
    assert window.unsaved.unsaved
    answers = iter([(unsaved.Answer.CANCEL, False)])
    assert not window.files.open(saved_run) and asked == ["open another run"]  # cancelled: the run stays
    assert window.state.trace.prompt.text == window.prompt.editor.toPlainText()
    answers = iter([(unsaved.Answer.CANCEL, False)])
    window.close()
    assert window.isVisible() and asked[-1] == "quit"
    answers = iter([(unsaved.Answer.DISCARD, True)])  # "don't ask again before a new run"
    run_and_wait(qtbot, window)
    assert asked[-1] == "start a new run" and not window.unsaved.ask_before_run
    run_and_wait(qtbot, window)
    assert len(asked) == 3  # not asked again before a run, still before quitting
    target = tmp_path / "kept.json"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *_a, **_k: (str(target), "")))
    answers = iter([(unsaved.Answer.SAVE, False)])
    assert window.files.open(saved_run) and target.is_file()  # saved first, then opened
    assert not window.unsaved.unsaved
    window.close()
    assert not window.isVisible() and len(asked) == 4  # nothing unsaved: no question


# -------------------------------------------------------------------------------- lanes, about, devices


def test_generation_configs_in_the_lane_editor(qtbot, make_window, tmp_path):
    from gui.views import generation_configs

    window = make_window()
    source = tmp_path / "SmolLM2" / "generation_config.json"
    source.parent.mkdir()
    source.write_text(json.dumps({"do_sample": True, "temperature": 0.6, "top_p": 0.9}), encoding="utf-8")
    index = generation_configs.import_generation_config(window.lanes, source)
    lane = window.state.lanes[index]
    assert lane.name == "config SmolLM2" and lane.spec.processors() == ["temperature", "top_k", "top_p"]
    assert "decodes as transformers does" in window.lanes.message.text()
    target = tmp_path / "out" / "generation_config.json"
    target.parent.mkdir()
    assert generation_configs.export_generation_config(window.lanes, index, target)
    assert json.loads(target.read_text(encoding="utf-8"))["top_k"] == 50
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"num_beams": 2, "num_beam_groups": 2}), encoding="utf-8")
    assert generation_configs.import_generation_config(window.lanes, bad) == -1
    assert "num_beam_groups" in window.lanes.message.text()
    menu = window.lanes.add_button.menu()
    assert menu.actions()[-1].text() == "From generation_config.json…"
    rect = window.lanes.table.visualItemRect(window.lanes.table.item(0, 0))
    entries = [a.text() for a in generation_configs.lane_menu(window.lanes, rect.center()).actions()]
    assert "Export as generation_config.json…" in entries


def test_about_names_the_model_provider_and_folders(qtbot, make_window, tiny_model_dir, tmp_path):
    from models.catalog import cache_root

    window = make_window(tiny_model_dir, Settings(tmp_path / "branchpoint.ini"))
    run_and_wait(qtbot, window, max_new_tokens=2)
    window.window_actions["about"].trigger()
    text = window.chrome.dialogs[-1].text.text()
    assert "tiny-random-llama" in text and str(tiny_model_dir) in text
    assert "Execution provider in use</b></td><td>CPU" in text
    assert str(cache_root()) in text and str(tmp_path / "branchpoint.ini") in text
    for name in ("Branchpoint", "Qt / PySide6", "ONNX Runtime", "pyqtgraph"):
        assert name in text


def test_the_device_menu_reloads_the_model_on_that_device(qtbot, make_window, tiny_model_dir):
    window = make_window(tiny_model_dir)
    window.menus.choice_actions("&Device")["cpu"].trigger()
    assert window.controller.device == "cpu" and window.controller.holder.device == "cpu"
    run_and_wait(qtbot, window, max_new_tokens=2)
    assert window.controller.holder.loaded.provider == "CPUExecutionProvider"


def test_splitters_named_for_settings_are_all_there(qtbot, make_window):
    """The window's four movable dividers are named (settings keep their sizes by name), every other splitter
    is one of the text's columns, and a layout captured and applied again puts the moved dividers back."""
    window = make_window()
    splitters = named_splitters(window)
    assert sorted(splitters) == ["bottomSplitter", "inspectorSplitter", "laneSplitter", "mainSplitter",
                                 "rightSplitter"]
    assert all(splitter.count() >= 2 for splitter in splitters.values())
    unnamed = [s for s in window.findChildren(QSplitter) if not s.objectName()]
    assert all(window.text.isAncestorOf(s) for s in unnamed)  # only the text's columns (one per lane)
    qtbot.wait(50)
    layout = capture_layout(window, (window.width(), window.height()))
    before = {name: splitter.sizes() for name, splitter in splitters.items()}
    for splitter in splitters.values():
        sizes = splitter.sizes()
        splitter.setSizes([sizes[0] + sizes[1] - 40, 40, *sizes[2:]])
    assert all(splitter.sizes() != before[name] for name, splitter in splitters.items())
    apply_layout(window, layout)
    assert {name: splitter.sizes() for name, splitter in splitters.items()} == before
