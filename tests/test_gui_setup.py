"""The model setup dialog (progress, stage names, Cancel, failure cause) and the app entry.

The dialog is driven by preparation functions with the real `models.prepare` signature and errors; the real
preparation (a download and a minute of export) is covered by the models tests and .ci/run."""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication

from gui.app import make_application, run_app
from gui.setup_dialog import SetupDialog
from models.errors import PrepareCancelled, PrepareError

TIMEOUT_MS = 10_000


def open_dialog(qtbot, prepare_fn) -> SetupDialog:
    make_application([])
    dialog = SetupDialog("Preparing", "test preparation", prepare_fn)
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def test_progress_and_cancel(qtbot):
    reached = threading.Event()

    def prepare_fn(progress, cancel):
        progress("download", 0.3, "downloading the wheel")
        reached.set()
        while not cancel():
            threading.Event().wait(0.01)
        raise PrepareCancelled("download")

    dialog = open_dialog(qtbot, prepare_fn)
    qtbot.waitUntil(lambda: dialog.bar.value() == 300, timeout=TIMEOUT_MS)
    assert dialog.stage.text() == "download — downloading the wheel"
    qtbot.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.failure.isVisible(), timeout=TIMEOUT_MS)
    assert "cancelled" in dialog.failure.text() and "download" in dialog.failure.text()
    assert dialog.result_path is None
    dialog.close()


def test_failure_shows_the_stage_and_cause_and_offers_retry(qtbot):
    def prepare_fn(progress, cancel):
        progress("export", 0.5, "exporting")
        raise PrepareError("export", "MemoryError: out of memory")

    dialog = open_dialog(qtbot, prepare_fn)
    qtbot.waitUntil(lambda: dialog.failure.isVisible(), timeout=TIMEOUT_MS)
    assert "export" in dialog.failure.text() and "out of memory" in dialog.failure.text()
    assert dialog.retry_button.isVisible() and dialog.cancel_button.text() == "Close"
    dialog.close()


def test_success_accepts_with_the_prepared_folder(qtbot, tmp_path):
    def prepare_fn(progress, cancel):
        progress("install", 1.0, "install done")
        return tmp_path

    dialog = open_dialog(qtbot, prepare_fn)
    qtbot.waitUntil(lambda: dialog.result_path is not None, timeout=TIMEOUT_MS)
    assert dialog.result_path == Path(tmp_path) and dialog.bar.value() == 1000


def test_app_entry_opens_the_window_on_a_model(qtbot, tiny_model_dir):
    app = make_application([])
    seen = {}

    def look_and_quit():
        windows = [w for w in QApplication.topLevelWidgets() if type(w).__name__ == "MainWindow" and w.isVisible()]
        seen["title"] = windows[0].windowTitle() if windows else None
        for window in windows:
            window.close()
        app.quit()

    QTimer.singleShot(300, look_and_quit)
    app.setQuitOnLastWindowClosed(False)  # else closing the window quits the next test's event loops too
    try:
        assert run_app(["--gui-model", str(tiny_model_dir)]) == 0
    finally:
        app.setQuitOnLastWindowClosed(True)
    assert seen["title"] == "Branchpoint — tiny-random-llama"
    assert app.desktopFileName() == "branchpoint" and not app.windowIcon().isNull()
    assert "Noto Sans CJK SC" in app.font().families()


def test_model_picker_adds_a_local_onnx_folder_through_the_setup_dialog(qtbot, tiny_model_dir, tmp_path,
                                                                         monkeypatch):
    from gui.model_picker import ModelPicker

    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path / "cache"))
    make_application([])
    picker = ModelPicker()
    qtbot.addWidget(picker)
    assert [picker.itemText(i) for i in range(picker.count())] == ["Add local folder…"]
    prepared = picker.prepare_folder(tiny_model_dir)  # runs models.prepare.register_onnx_folder in the dialog
    assert prepared is not None and (prepared / "model.onnx").is_file()
    assert prepared.parent == tmp_path / "cache" / "models"
    picker.refresh(prepared)
    assert picker.currentText() == prepared.name and picker.count() == 2


def test_install_desktop_writes_a_valid_launcher_into_home(tmp_path, monkeypatch, capsys):
    """`main.py --gui-install-desktop` writes ~/.local/share/applications/branchpoint.desktop with absolute
    paths (this Python, main.py, the icon) and the window class; paths with spaces or quotes are quoted."""
    import shutil
    import subprocess
    import sys

    import main
    from gui.desktop import ICON, MAIN, desktop_entry, exec_argument

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    assert main.main(["--gui-install-desktop"]) == 0
    launcher = tmp_path / ".local" / "share" / "applications" / "branchpoint.desktop"
    assert str(launcher) in capsys.readouterr().out
    entry = dict(line.split("=", 1) for line in launcher.read_text(encoding="utf-8").splitlines() if "=" in line)
    assert entry["Exec"] == f"{sys.executable} {MAIN}" and MAIN.is_file() and Path(sys.executable).is_absolute()
    assert entry["Icon"] == str(ICON) and ICON.is_file()
    make_application([])
    assert entry["StartupWMClass"] == "branchpoint" == QApplication.desktopFileName()  # how shells match windows
    assert exec_argument('/opt/my apps/"x"$') == r'"/opt/my apps/\\"x\\"\\$"'
    assert exec_argument("/a/50%") == "/a/50%%"
    odd = tmp_path / "odd" / "my python"
    odd.parent.mkdir()
    odd.with_name("odd.desktop").write_text(desktop_entry(odd), encoding="utf-8")
    if shutil.which("desktop-file-validate"):
        for path in (launcher, odd.with_name("odd.desktop")):
            done = subprocess.run(["desktop-file-validate", str(path)], capture_output=True, text=True)
            assert done.returncode == 0 and not done.stdout.strip(), done.stdout
