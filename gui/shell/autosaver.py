"""Nothing generated is lost: the run the window shows (or streams) is autosaved atomically while it streams and
whenever it changes, by runfiles.autosave, on a thread of its own (writing a run takes ~0.2 s: the window must
not stall). A clean exit discards it; after a crash or kill -9 the next start offers to restore it.

The folder is the platform's user state directory (or $BRANCHPOINT_STATE_DIR), never the install directory.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from gui.i18n import translate
from gui.state.run_state import RunState
from runfiles import autosave

STREAMING_INTERVAL_MS = int(os.environ.get("BRANCHPOINT_AUTOSAVE_MS", "5000"))  # while a run streams, this often
QUIET_DELAY_MS = 300  # after a change, this long (changes come in bursts)


def autosave_folder() -> Path:
    override = os.environ.get("BRANCHPOINT_STATE_DIR")
    if override:
        return Path(override) / "autosave"
    from platformdirs import user_state_path

    return user_state_path("branchpoint", appauthor=False) / "autosave"


class Autosaver(QObject):
    failed = Signal(str)  # from the writing thread to the window's (queued)

    def __init__(self, state: RunState, folder: Path | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.store = autosave.Autosave(folder or autosave_folder())
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="autosave")
        self._pending: Future | None = None
        self._dirty = False
        self._failing = False
        self._streaming = QTimer(self)
        self._streaming.setInterval(STREAMING_INTERVAL_MS)
        self._streaming.timeout.connect(self.save_if_dirty)
        self._soon = QTimer(self)
        self._soon.setSingleShot(True)
        self._soon.setInterval(QUIET_DELAY_MS)
        self._soon.timeout.connect(self.save_if_dirty)
        self.failed.connect(self._on_failed)
        events = state.events
        for name in ("lanes_reset", "lane_inserted", "lane_removed", "lane_moved", "lane_changed",
                     "sweeps_changed", "explanations_changed"):
            events.connect(name, self._changed_now)
        events.connect("step_added", self._changed_streaming)
        events.connect("member_step_added", self._changed_streaming)
        events.connect("run_started", lambda _job: self._streaming.start())
        events.connect("run_finished", self._on_run_finished)

    @property
    def path(self) -> Path:
        return self.store.path

    def _changed_streaming(self, *_args) -> None:
        self._dirty = True

    def _changed_now(self, *_args) -> None:
        self._dirty = True
        self._soon.start()

    def _on_run_finished(self) -> None:
        """The run's final state is queued at once (behind a write on its way, never skipped for it): a timer
        could fire after the user, or a test, has read the file or exited."""
        self._streaming.stop()
        self._soon.stop()
        self._dirty = True
        self._save()

    @Slot()
    def save_if_dirty(self) -> None:
        if not self._dirty or (self._pending is not None and not self._pending.done()):
            return  # a write is on its way: the next tick takes the newer state
        self._save()

    def _save(self) -> None:
        """Queue a write of the current state (one writing thread: writes land in the order queued)."""
        trace = self.state.autosave_trace()
        if trace is None:
            return
        self._dirty = False
        self._pending = self._executor.submit(self._write, trace)

    def _write(self, trace) -> None:
        try:
            self.store.write(trace)
        except OSError as error:  # disk full, folder not writable: the previous autosave stays as it was
            self.failed.emit(f"{type(error).__name__}: {error}")
        else:
            self._failing = False

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        if not self._failing:  # once until a write succeeds again
            self._failing = True
            self.state.show_notice(translate("autosaver", "Autosave failed ({message}). The run is still here: save it "
                                                          "with Save…").format(message=message),
                                   cause="autosave")

    def flush(self) -> None:
        """Write what changed since the last write and wait until every queued write is on disk (tests, exit)."""
        if self._dirty:
            self._save()
        if self._pending is not None:
            self._pending.result()

    def close(self, discard: bool = True) -> None:
        """A clean exit: stop, wait for the last write, and remove the autosave (nothing to restore)."""
        self._streaming.stop()
        self._soon.stop()
        self._executor.shutdown(wait=True)
        if discard:
            try:
                self.store.discard()
            except OSError:  # an unwritable folder never held an autosave: nothing to remove
                pass


def restorable() -> list[Path]:
    """Autosaves a crashed (or killed) instance left, newest first."""
    return autosave.orphans(autosave_folder())
