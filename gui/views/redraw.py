"""Throttled redraws while a run streams. Steps land in the RunState at once (hundreds a second on a fast
model); views only note what became stale here, and a ~30 Hz timer redraws it within a time budget per tick,
oldest first, so the event loop never stalls. Text and charts take turns: a tick's redraw and the repaint it
causes stay short. What does not fit a tick waits for the next one.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Slot

REDRAW_INTERVAL_MS = 33  # ~30 Hz
FLUSH_BUDGET_S = 0.012  # GUI time per tick while a run streams: the window stays responsive
GROUPS = ("text", "charts")


class RedrawScheduler(QObject):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        # Per group, stale items oldest first (a dict as an ordered set): key -> redraw callback.
        self._pending: dict[str, dict[object, Callable[[], None]]] = {group: {} for group in GROUPS}
        self._after: list[Callable[[], None]] = []  # called after every flush (progress readouts)
        self._charts_turn = False
        self._timer = QTimer(self)
        self._timer.setInterval(REDRAW_INTERVAL_MS)
        self._timer.timeout.connect(self.tick)

    def mark(self, group: str, key: object, redraw: Callable[[], None]) -> None:
        """`redraw` brings item `key` up to date; it runs at the next tick with time left (once, however
        often the item was marked)."""
        self._pending[group].setdefault(key, redraw)

    def after_flush(self, callback: Callable[[], None]) -> None:
        self._after.append(callback)

    def pending(self) -> bool:
        return any(self._pending.values())

    def start(self) -> None:
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    def discard(self) -> None:
        """Forget what is stale (the views are about to be redrawn whole)."""
        for items in self._pending.values():
            items.clear()

    @Slot()
    def tick(self) -> None:
        self.flush(FLUSH_BUDGET_S)

    def flush(self, budget_s: float | None = None) -> None:
        """Redraw what is stale. With a budget, text and charts alternate ticks when both are stale; without,
        everything is redrawn now."""
        deadline = None if budget_s is None else time.perf_counter() + budget_s
        text, charts = self._pending["text"], self._pending["charts"]
        do_text = bool(text) and (budget_s is None or not self._charts_turn or not charts)
        do_charts = bool(charts) and (budget_s is None or not do_text)
        self._charts_turn = do_text
        for group, on in (("text", do_text), ("charts", do_charts)):
            items = self._pending[group]
            while on and items and not _past(deadline):
                key = next(iter(items))
                items.pop(key)()
        for callback in self._after:
            callback()


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() > deadline


class DrawnWhenShown:
    """Mixed into a view (before QWidget) whose drawing is costly, e.g. a 32-member fan-out redrawn at every
    tick while it streams: `redraw()` draws now when the view is on screen, else when it is next shown or read.
    The view draws in `_draw()` and calls `_draw_if_stale()` first in the methods that read what it drew."""

    _stale = True

    def redraw(self) -> None:
        self._stale = True
        if self.isVisible():
            self._draw_if_stale()

    def showEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        self._draw_if_stale()

    def _draw_if_stale(self) -> None:
        if self._stale:
            self._stale = False
            self._draw()

    def _draw(self) -> None:
        raise NotImplementedError
