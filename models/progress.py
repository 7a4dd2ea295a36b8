"""Stage bookkeeping for a preparation: overall progress, cancellation, and errors that name their stage."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from models.errors import PrepareCancelled, PrepareError

ProgressCallback = Callable[[str, float, str], None]
BytesCallback = Callable[[int, int], None]  # (bytes done, bytes in all) of a download
CancelCheck = threading.Event | Callable[[], bool] | None


def as_cancel_check(cancel: CancelCheck) -> Callable[[], bool]:
    if cancel is None:
        return lambda: False
    if isinstance(cancel, threading.Event):
        return cancel.is_set
    return cancel


class Stages:
    """Tracks the current stage of a plan [(stage, expected seconds), …] and reports overall progress:
    `progress(stage, fraction_of_whole_preparation, message)`."""

    def __init__(self, plan: list[tuple[str, float]], progress: ProgressCallback | None, cancel: CancelCheck,
                 on_bytes: BytesCallback | None = None):
        self.plan = dict(plan)
        self.order = [name for name, _ in plan]
        self.total = sum(self.plan.values())
        self.callback = progress
        self.cancelled = as_cancel_check(cancel)
        self.current = self.order[0]
        self.started = time.monotonic()
        self.fraction = 0.0  # of the current stage; never goes back
        self.seconds: dict[str, float] = {}  # wall time per finished stage, recorded in the manifest
        self.on_bytes = on_bytes

    def enter(self, stage: str, message: str = "") -> None:
        self.seconds[self.current] = round(time.monotonic() - self.started, 2)
        self.current = stage
        self.started = time.monotonic()
        self.fraction = 0.0
        self.report(0.0, message or stage)

    def finish(self, message: str) -> None:
        """Jump to the end (nothing to do, e.g. already prepared)."""
        self.current = self.order[-1]
        self.fraction = 0.0
        self.report(1.0, message)

    def report(self, fraction: float, message: str) -> None:
        self.fraction = max(self.fraction, min(fraction, 1.0))
        if self.callback is None:
            return
        done = sum(self.plan[s] for s in self.order[: self.order.index(self.current)])
        overall = (done + self.plan[self.current] * self.fraction) / self.total
        self.callback(self.current, overall, message)

    def tick(self, message: str) -> None:
        """Progress estimated from the stage's expected duration, for steps that report nothing themselves
        (capped below the end of the stage)."""
        expected = max(self.plan[self.current], 1e-3)
        elapsed = time.monotonic() - self.started
        self.report(min(0.95, elapsed / expected), message)

    def check_cancel(self) -> None:
        if self.cancelled():
            raise PrepareCancelled(self.current)

    @contextmanager
    def stage(self, name: str, message: str = "") -> Iterator[None]:
        """Run one stage: cancel is checked before it; any failure becomes a PrepareError naming it."""
        self.check_cancel()
        self.enter(name, message)
        try:
            yield
        except PrepareError:
            raise
        except KeyboardInterrupt:
            raise PrepareCancelled(self.current, "interrupted (Ctrl-C)") from None
        except Exception as exc:
            raise PrepareError(self.current, describe_exception(exc)) from exc
        self.report(1.0, f"{name} done")


def describe_exception(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.strerror or type(exc).__name__}: {exc.filename}"
    if isinstance(exc, ValueError | FileNotFoundError):  # raised here with a message written for the user
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
