"""What a user does with the main window in pytest-qt tests: run and wait, find a token on screen. The windows
themselves come from the `make_window` / `window` fixtures (tests/conftest.py), which always shut them down."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
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


def take_candidate(qtbot, window, lane: int) -> tuple[int, int]:
    """Double-click the inspector's first bar the lane did not pick at its proposed step; returns its token id and
    the lane's own pick."""
    window.state.select(lane, len(window.state.lanes[lane].trace.steps) - 1)
    own = window.state.lanes[lane].trace.steps[-1].token_id
    qtbot.wait(30)
    inspector = window.inspector
    row = next(i for i, r in enumerate(inspector.rows()) if not r.chosen)
    token = inspector.rows()[row].token_id
    view = inspector._canvas
    pos = view.mapFromScene(inspector.scene_pos_of_row(row) + QPointF(4, 0))
    qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    qtbot.mouseRelease(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    wait_idle(qtbot, window)
    return token, own


def one_lane_window_beside(make_window, run_model, other_name: str, other_dir, tmp_path, monkeypatch):
    """A window on `run_model` with one lane left and selected, while `other_dir` is a prepared model named
    `other_name` (a link in a cache of the test's own), so the lanes editor's model field lists it."""
    models = tmp_path / "cache" / "models"
    models.mkdir(parents=True)
    (models / other_name).symlink_to(other_dir)
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path / "cache"))
    window = make_window(run_model)
    editor = window.lanes
    while len(window.state.lanes) > 1:
        editor._select_row(1)
        editor.remove_selected()
    editor._select_row(0)
    return window
