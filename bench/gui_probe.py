"""Items 6 and 8 in a fresh process (run by bench.gui_items and bench.startup_items): `launch` starts as the
app does (the model loading once the window is on screen) and prints when the main window is visible and when
the model is ready; `stall` streams 5-lane runs (or a seed fan-out) into the window while a 5 ms QTimer
heartbeat records the event loop's gaps (the model loaded by the first run). Prints one JSON line. Qt is imported
inside the functions (bench/ imports no Qt at module level)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HEARTBEAT_MS = 5


def open_window(model_dir: Path):
    """What gui.app.run_app does before the event loop: application, main window on the model, shown."""
    from gui.app import make_application
    from gui.main_window import MainWindow
    from gui.shell.settings import DEFAULT_SIZE

    app = make_application([])
    window = MainWindow(model_dir)
    window.unsaved.ask_before_run = False  # as after "don't ask again": a modal "Save changes?" would wait forever
    window.resize(*DEFAULT_SIZE)
    window.show()
    return app, window


def launch(model_dir: Path) -> dict:
    from PySide6.QtCore import QTimer

    app, window = open_window(model_dir)
    result = {}

    def visible() -> None:
        app.processEvents()
        result.update(visible_at=time.time(), visible=window.isVisible())
        window.preload_model()  # as the app does once its event loop runs
        ready()

    def ready() -> None:
        holder = window.controller.holder
        if holder.loaded is None and holder.preloading:
            QTimer.singleShot(5, ready)
            return
        result.update(ready_at=time.time() if holder.loaded is not None else None)
        app.quit()

    QTimer.singleShot(0, visible)
    app.exec()
    return result


class Heartbeat:
    """Largest gap between ticks of a QTimer that should fire every HEARTBEAT_MS."""

    def __init__(self):
        from PySide6.QtCore import QTimer

        self.gaps: list[float] = []
        self.last = time.perf_counter()
        self.timer = QTimer()
        self.timer.setInterval(HEARTBEAT_MS)
        self.timer.timeout.connect(self.tick)
        self.timer.start()

    def tick(self) -> None:
        now = time.perf_counter()
        self.gaps.append(now - self.last)
        self.last = now

    def reset(self) -> None:
        self.gaps.clear()
        self.last = time.perf_counter()


def stream_once(app, window, heartbeat: Heartbeat, tokens: int) -> dict:
    from PySide6.QtCore import QEventLoop, QTimer

    from gui.state.requests import RunRequest

    window.state.set_request(RunRequest(max_new_tokens=tokens))
    loop = QEventLoop()
    window.worker.finished.connect(loop.quit)
    window.worker.failed.connect(loop.quit)
    QTimer.singleShot(600_000, loop.quit)
    heartbeat.reset()
    started = time.perf_counter()
    window.commands.run()
    loop.exec()
    elapsed = time.perf_counter() - started
    gaps = sorted(heartbeat.gaps) or [0.0]
    return {
        "max_gap_ms": 1e3 * gaps[-1],
        "p99_gap_ms": 1e3 * gaps[int(0.99 * (len(gaps) - 1))],
        "ticks": len(gaps),
        "seconds": elapsed,
        "tokens": window.state.total_tokens(),
    }


class SlotTimer:
    """Wraps what runs on the GUI thread during a run to record each one's longest call (a stall is either one
    of these or the worker holding the GIL): the redraw tick, a streamed message, the end of the run."""

    SLOTS = {"redraw_tick": ("gui.views.redraw", "RedrawScheduler", "tick"),
             "on_message": ("gui.state.controller", "RunController", "on_message"),
             "on_finished": ("gui.main_window", "MainWindow", "_on_job_finished")}

    def __init__(self):
        import importlib

        self.longest = dict.fromkeys(self.SLOTS, 0.0)
        for name, (module, cls, method) in self.SLOTS.items():
            owner = getattr(importlib.import_module(module), cls)
            setattr(owner, method, self._timed(name, getattr(owner, method)))

    def _timed(self, name: str, original):
        def timed(obj, *args) -> None:
            start = time.perf_counter()
            original(obj, *args)
            self.longest[name] = max(self.longest[name], time.perf_counter() - start)

        return timed

    def reset(self) -> None:
        self.longest = dict.fromkeys(self.SLOTS, 0.0)


def stall(model_dir: Path, tokens: int, fanout: int = 0, tab: str | None = None) -> dict:
    """The default lanes, or one sampled lane (T 1.0) run as a `fanout`-member seed fan-out; `tab`: the chart
    shown while it streams (attribute name of the window's view, e.g. "fanout"), else the window's first."""
    slots = SlotTimer()  # before the window exists: its connections take the wrapped methods
    app, window = open_window(model_dir)
    if fanout:
        from decoding.chain.spec import LaneSpec

        window.state.set_specs([LaneSpec("T 1.0", do_sample=True, temperature=1.0, seed=11)])
        window.state.set_fanout(0, fanout)
    if tab:
        window.charts.setCurrentWidget(getattr(window, tab))
    heartbeat = Heartbeat()
    first = stream_once(app, window, heartbeat, tokens)  # loads the model on the worker thread
    slots.reset()
    second = stream_once(app, window, heartbeat, tokens)
    second["longest_slot_ms"] = {name: 1e3 * seconds for name, seconds in slots.longest.items()}
    window.unsaved.mark_saved()  # closing asks about an unsaved run otherwise
    window.close()
    return {"first_run": first, "streaming": second}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("launch", "stall"))
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--fanout", type=int, default=0, help="stall: members of a T 1.0 fan-out instead of 5 lanes")
    parser.add_argument("--tab", help="stall: the chart shown while streaming (e.g. fanout)")
    args = parser.parse_args()
    result = launch(args.model) if args.mode == "launch" else stall(args.model, args.tokens, args.fanout, args.tab)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
