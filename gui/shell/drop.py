"""A run file (JSON) dragged from a file manager and dropped anywhere on the window opens it; a GGUF model file
is added as a model (prepared, then chosen). The read-only views
(text columns, charts) let drops through to the window; the prompt editor keeps taking dropped text but hands
a dropped run file to the window too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEvent, QMimeData, QObject
from PySide6.QtWidgets import QAbstractSpinBox, QLineEdit, QPlainTextEdit, QTextEdit, QWidget

from gui.state.run_state import RunState


def run_file(mime: QMimeData, suffix: str = ".json") -> Path | None:
    """The one local file with that suffix (a run file) a drag carries, or None."""
    urls = [url for url in mime.urls() if url.isLocalFile()] if mime.hasUrls() else []
    if len(urls) != 1 or not urls[0].toLocalFile().lower().endswith(suffix):
        return None
    return Path(urls[0].toLocalFile())


def takes_text(widget: QWidget) -> bool:
    """Widgets where dropping text means something (they keep their own drops)."""
    if isinstance(widget, QTextEdit | QPlainTextEdit):
        return not widget.isReadOnly()
    return isinstance(widget, QLineEdit | QAbstractSpinBox)


class RunFileDrop(QObject):
    """Run files dropped on `window` go to `open_run`; `editor` keeps dropped text; `texts` (the lane columns,
    rebuilt as lanes come and go) let drops through."""

    def __init__(self, window: QWidget, open_run: Callable[[Path], object], editor: QPlainTextEdit, texts: QWidget,
                 state: RunState, open_gguf: Callable[[Path], object] | None = None) -> None:
        super().__init__(window)
        self.open_run = open_run
        self.open_gguf = open_gguf
        window.setAcceptDrops(True)
        window.installEventFilter(self)
        editor.viewport().installEventFilter(self)  # a text edit takes drops on its viewport
        self.pass_drops_through(window)
        for name in ("lanes_reset", "lane_inserted", "lane_removed"):  # new text columns
            state.events.connect(name, lambda *_: self.pass_drops_through(texts))

    @staticmethod
    def pass_drops_through(root: QWidget) -> None:
        """Views that would swallow a drag (text browsers, plots) let it go to the window instead."""
        for widget in root.findChildren(QWidget):
            if widget.acceptDrops() and not takes_text(widget) and not takes_text(widget.parentWidget()):
                widget.setAcceptDrops(False)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt override)
        kind = event.type()
        if kind in (QEvent.Type.DragEnter, QEvent.Type.DragMove, QEvent.Type.Drop):
            path, opener = run_file(event.mimeData()), self.open_run
            if path is None and self.open_gguf is not None:
                path, opener = run_file(event.mimeData(), ".gguf"), self.open_gguf
            if path is not None:
                event.acceptProposedAction()
                if kind == QEvent.Type.Drop:
                    opener(path)
                return True
        return super().eventFilter(watched, event)
