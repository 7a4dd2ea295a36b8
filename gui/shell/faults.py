"""Unexpected errors in the window: an exception that escapes a Qt slot (or any other GUI-thread callback) is
logged with its traceback in branchpoint.log (in the state folder), still printed to stderr, and said in the
window's notice, so it never goes by unseen; Qt's own warnings go to the same log."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from PySide6.QtCore import QMessageLogContext, QtMsgType, qInstallMessageHandler

from gui.i18n import translate
from gui.shell.autosaver import autosave_folder
from gui.state.run_state import RunState

LOG = logging.getLogger("branchpoint")
_QT_LEVELS = {QtMsgType.QtWarningMsg: logging.WARNING, QtMsgType.QtCriticalMsg: logging.ERROR,
              QtMsgType.QtFatalMsg: logging.CRITICAL}


def log_path() -> Path:
    return autosave_folder().parent / "branchpoint.log"


def install(state: RunState) -> Callable[[], None]:
    """Report unexpected errors in `state`'s notice and the log from now on; returns what undoes it."""
    path = log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    LOG.addHandler(handler)
    previous_hook = sys.excepthook

    def report(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
        LOG.error("unexpected error in the window", exc_info=(kind, error, trace))
        previous_hook(kind, error, trace)  # stderr, as before
        if threading.current_thread() is threading.main_thread() and not issubclass(kind, KeyboardInterrupt):
            state.show_notice(translate("faults", "Unexpected error: {error}. The window may show something out of "
                                                  "date until the next run; the details are in {log}.")
                              .format(error=f"{kind.__name__}: {error}", log=path))

    def qt_message(kind: QtMsgType, _context: QMessageLogContext, message: str) -> None:
        if kind in _QT_LEVELS:
            LOG.log(_QT_LEVELS[kind], "Qt: %s", message)
        print(message, file=sys.stderr)  # as Qt's own handler does

    sys.excepthook = report
    previous_handler = qInstallMessageHandler(qt_message)

    def undo() -> None:
        sys.excepthook = previous_hook
        qInstallMessageHandler(previous_handler)
        LOG.removeHandler(handler)
        handler.close()

    return undo
