"""Background work on a QThread: a job function runs there and reports through signals. In dialogs/, below the
shell: the setup dialog a view opens runs its preparation on it (views never reach the shell).

The job gets two callables: `emit(payload)` to stream progress objects (StepRecords, preparation stages...)
and `cancelled()` to poll for Stop. Signals are delivered to slots of GUI-thread QObjects (queued
connections); never connect lambdas to them, which may run on the worker thread.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

ThreadJob = Callable[[Callable[[Any], None], Callable[[], bool]], Any]  # (emit, cancelled) -> result


class _Runner(QObject):
    progress = Signal(object)
    finished = Signal(object)
    failed = Signal(str, str)  # message, traceback

    def __init__(self, job: ThreadJob, cancel: threading.Event) -> None:
        super().__init__()
        self._job = job
        self._cancel = cancel

    @Slot()
    def run(self) -> None:
        try:
            result = self._job(self.progress.emit, self._cancel.is_set)
        except Exception as error:  # the job's error is shown in the window, never a crash
            self.failed.emit(_message(error), traceback.format_exc())
        else:
            self.finished.emit(result)


WORDED = (ValueError, OSError, RuntimeError)  # refusals in words, the system's and the model runtime's messages


def _message(error: BaseException) -> str:
    """What the window says of a job's error: its words (never the exception's class name, which the log keeps
    with the traceback), or the class of an unexpected error without any."""
    text = str(error).strip()
    if isinstance(error, WORDED) and text:
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class Worker(QObject):
    """Owns one QThread that runs one job. Re-emits the runner's signals on the GUI thread."""

    progress = Signal(object)
    finished = Signal(object)
    failed = Signal(str, str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._thread: QThread | None = None
        self._runner: _Runner | None = None
        self._cancel = threading.Event()

    def is_running(self) -> bool:
        return self._thread is not None and self._thread.isRunning()

    def start(self, job: ThreadJob) -> None:
        if self.is_running():
            raise RuntimeError("a job is already running")
        self._cleanup()
        self._cancel = threading.Event()
        self._thread = QThread()
        self._runner = _Runner(job, self._cancel)
        self._runner.moveToThread(self._thread)
        self._thread.started.connect(self._runner.run)
        self._runner.progress.connect(self._on_progress)
        self._runner.finished.connect(self._on_finished)
        self._runner.failed.connect(self._on_failed)
        self._thread.start()

    def cancel(self) -> None:
        """Ask the job to stop at its next check; it then finishes normally with what it has."""
        self._cancel.set()

    def stop_and_wait(self, timeout_ms: int = 30_000) -> bool:
        """Cancel and block until the thread has ended (window close, test teardown). True if it ended."""
        self.cancel()
        if self._thread is None:
            return True
        self._thread.quit()
        ended = self._thread.wait(timeout_ms)
        if ended:
            self._cleanup()
        return ended

    @Slot(object)
    def _on_progress(self, payload: object) -> None:
        self.progress.emit(payload)

    @Slot(object)
    def _on_finished(self, result: object) -> None:
        self._end_thread()
        self.finished.emit(result)

    @Slot(str, str)
    def _on_failed(self, message: str, details: str) -> None:
        self._end_thread()
        self.failed.emit(message, details)

    def _end_thread(self) -> None:
        if self._thread is not None:
            self._thread.quit()
            self._thread.wait()

    def _cleanup(self) -> None:
        if self._thread is not None and not self._thread.isRunning():
            self._runner = None
            self._thread = None


class GuiThreadCall(QObject):
    """`call(function, *args)` from any thread runs `function(*args)` on this object's (the GUI) thread."""

    _requested = Signal(object, tuple)

    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        self._requested.connect(self._run, Qt.ConnectionType.QueuedConnection)

    def call(self, function: Callable, *args) -> None:
        self._requested.emit(function, args)

    @Slot(object, tuple)
    def _run(self, function: Callable, args: tuple) -> None:
        function(*args)
