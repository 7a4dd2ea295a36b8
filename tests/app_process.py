"""The real app entry (`main.main`) in a child process, looked at once its window shows and then quit.

In a child because quitting the QApplication fires pyqtgraph's aboutToQuit cleanup (ViewBox.quit), after which
the test process's later views crash it when they are deleted. The child's exit status is the app's own: a
crash while quitting fails the test too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = """
import json, sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
import main
from gui.app import make_application

app = make_application([])
seen = {}

def look_and_quit():
    windows = [w for w in QApplication.topLevelWidgets() if type(w).__name__ == "MainWindow" and w.isVisible()]
    if windows:
        seen.update(title=windows[0].windowTitle(), lanes=[lane.name for lane in windows[0].state.lanes],
                    prompt=windows[0].prompt.editor.toPlainText())
    seen.update(families=app.font().families(), desktop_file=app.desktopFileName(), icon=not app.windowIcon().isNull())
    for window in windows:
        window.close()
    app.quit()

QTimer.singleShot(300, look_and_quit)
seen["returned"] = main.main(sys.argv[1:])
print(json.dumps(seen))
"""


def open_and_look(args: list[str], env: dict[str, str] | None = None, timeout: float = 120) -> dict:
    """What the window showed (title, lane names, prompt; the app's fonts, desktop name, icon) and what
    main.main returned; asserts the process itself exited 0."""
    done = subprocess.run([sys.executable, "-c", CHILD, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
