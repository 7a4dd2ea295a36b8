"""What a user does with the main window in pytest-qt tests: run and wait, find a token on screen. The windows
themselves come from the `make_window` / `window` fixtures (tests/conftest.py), which always shut them down."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QImage, QTextCursor

from gui.main_window import MainWindow

RUN_TIMEOUT_MS = 60_000


def run_and_wait(qtbot, window: MainWindow, max_new_tokens: int = 12, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    window.prompt.max_new_tokens.setValue(max_new_tokens)
    qtbot.mouseClick(window.prompt.run_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, window, timeout_ms)


def wait_idle(qtbot, window: MainWindow, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    qtbot.waitUntil(lambda: not window.worker.is_running() and window.prompt.run_button.isEnabled(),
                    timeout=timeout_ms)


def anchors(window: MainWindow, lane: int) -> dict[str, int]:
    """Token anchors in a lane's column: href → document position of its first character."""
    found: dict[str, int] = {}
    block = window.text.columns[lane].browser.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            found.setdefault(fragment.charFormat().anchorHref(), fragment.position())
            it += 1
        block = block.next()
    return found


def token_point(qtbot, window: MainWindow, lane: int, step: int) -> QPoint:
    """Viewport position of the token anchor tok:<lane>:<step> (after pending layouts)."""
    qtbot.wait(50)
    position = anchors(window, lane)[f"tok:{lane}:{step}"]
    return _first_char_centre(window.text.columns[lane].browser, position)


def _first_char_centre(browser, position: int) -> QPoint:
    """A point inside the first visible character of the anchor starting at `position`."""
    document = browser.document()
    while document.characterAt(position).isspace():
        position += 1  # a leading space may sit at the end of the previous line
    cursor = QTextCursor(document)
    cursor.setPosition(position)
    before = browser.cursorRect(cursor)
    cursor.setPosition(position + 1)
    after = browser.cursorRect(cursor)
    x = (before.center().x() + after.center().x()) // 2 if after.top() == before.top() else before.right() + 2
    return QPoint(x, before.center().y())




def colour_counts(image: QImage) -> dict[str, int]:
    """Pixels per colour ("#rrggbb"): what a chart really drew, where its bars and curves have their own colours."""
    counts: dict[str, int] = {}
    for x in range(image.width()):
        for y in range(image.height()):
            name = image.pixelColor(x, y).name()
            counts[name] = counts.get(name, 0) + 1
    return counts
