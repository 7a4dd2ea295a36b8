"""The model setup dialog (progress, stage names, Cancel, failure cause) and the app entry.

The dialog is driven by preparation functions with the real `models.prepare` signature and errors; the real
preparation (a download and a minute of export) is covered by the models tests and .ci/run."""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter

from gui.app import make_application
from gui.dialogs.setup_dialog import SetupDialog
from models.errors import PrepareCancelled, PrepareError
from tests.app_process import open_and_look

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


def test_app_entry_opens_the_window_on_a_model(tiny_model_dir):
    seen = open_and_look(["--gui-model", str(tiny_model_dir)])
    assert seen["returned"] == 0 and seen["title"] == "Branchpoint — tiny-random-llama"
    assert seen["desktop_file"] == "branchpoint" and seen["icon"]
    assert "Noto Sans CJK SC" in seen["families"]


def test_model_picker_adds_a_local_onnx_folder_through_the_setup_dialog(qtbot, tiny_model_dir, tmp_path,
                                                                         monkeypatch):
    from gui.views.model_picker import ModelPicker

    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path / "cache"))
    make_application([])
    picker = ModelPicker()
    qtbot.addWidget(picker)
    from models.catalog import CATALOG

    texts = [picker.itemText(i) for i in range(picker.count())]
    commands = ["Add model from Hugging Face…", "Add GGUF file…", "Add local folder…", "Add precision variant…",
                "Add a server…"]
    assert texts[-5:] == commands
    assert [t.split(" · ")[0] for t in texts[:len(CATALOG)]] == [e.name for e in CATALOG], "the catalog, unprepared"
    before = picker.count()
    prepared = picker.prepare_folder(tiny_model_dir)  # runs models.prepare.register_onnx_folder in the dialog
    assert prepared is not None and (prepared / "model.onnx").is_file()
    assert prepared.parent == tmp_path / "cache" / "models"
    picker.refresh(prepared)
    assert picker.currentText().startswith(f"{prepared.name} · fp32 · ") and picker.count() == before + 1


def glyph_image(font: QFont, text: str) -> QImage:
    """`text` drawn black on white with `font`, as the window draws it."""
    font = QFont(font)
    font.setPixelSize(40)
    image = QImage(60 * len(text), 60, QImage.Format.Format_RGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setFont(font)
    painter.setPen(QColor("black"))
    painter.drawText(QPoint(5, 45), text)
    painter.end()
    return image


def ink(image: QImage) -> int:
    return sum(image.pixelColor(x, y).value() < 128 for x in range(image.width()) for y in range(image.height()))


def test_chinese_glyphs_really_render_with_the_app_font(qtbot):
    """Not the family list but the pixels: each character draws ink, differs from the box Qt draws for a
    character no font has (U+E000, private use), and differs from the other characters."""
    font = make_application([]).font()
    missing = glyph_image(font, "\ue000")
    images = {char: glyph_image(font, char) for char in "我很累决定"}
    for char, image in images.items():
        assert ink(image) > 40, f"{char} draws nothing"
        assert image != missing, f"{char} draws as a missing glyph"
    assert len({image.bits().tobytes() for image in images.values()}) == len(images)
