"""Long sessions stay flat: SOAK_RUNS (200; BRANCHPOINT_SOAK_RUNS for more) consecutive runs in one process grow
resident memory by less than 50 MB and leave no thread, file descriptor or ONNX Runtime session behind. The
engine on the default model (all default lanes, a fan-out, a branch in the run and after it; 4 new tokens a run
so CI stays within minutes), and the window on the tiny model (Run clicked, streamed, drawn). Then long runs in the
window on the default model: 512-token runs and 32-member fan-outs, memory and handles flat from run to run and
the window's thread never working more than 500 ms at a stretch (nor held up 1 s) while they stream."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from decoding.analysis.fanout import fan_out
from decoding.chain.spec import Branch, LaneSpec, default_lanes
from decoding.engine.engine import Engine, branch_prefix
from tests.processes import HAS_PROC
from tests.reliability.resources import SOAK_RUNS, Resources, assert_flat, measure

pytestmark = pytest.mark.skipif(not HAS_PROC, reason="reads this process's resources from /proc")

PROMPTS = ["Once upon a time", "The capital of France is", "我虽然很累，但还是决定",
           "def fib(n):\n    return n if n < 2 else", "Although I was tired, I still decided to go out and"]
WARM_UP = 10  # ORT's arenas and the caches reach their working size in the first runs
OWN_PROCESS = "BRANCHPOINT_SOAK_OWN_PROCESS"  # set in a soak's own process (the own_process fixture)
ROOT = Path(__file__).resolve().parents[2]


def one_run(model, engine: Engine, index: int) -> None:
    prompt = model.encode_prompt(PROMPTS[index % len(PROMPTS)], chat=index % 7 == 0)
    specs = [*default_lanes(), *fan_out(LaneSpec("fan", do_sample=True, top_p=0.9), 2),
             LaneSpec("branch", branch=Branch("greedy", 1, 13))]
    trace = engine.run(prompt, specs, max_new_tokens=4, base_seed=index)
    assert trace.error is None
    after = LaneSpec("after", do_sample=True, seed=index, forced={2: 11})  # an after-run branch: a Prefix
    engine.run(prompt, [after], max_new_tokens=4, prefix=branch_prefix(trace, "greedy", 2))


@pytest.fixture
def own_process(request) -> bool:
    """True inside a soak's own pytest process. Outside it, runs the test there and returns False: the test then
    ends, its verdict the child's. A soak measures the process it runs in, and in the test session's process what
    a thousand earlier tests left (objects for the collector, grown arenas) made allocated memory jump by 265 MB
    once in six full runs, and a full garbage collection held the window's thread 149 ms in another."""
    if os.environ.get(OWN_PROCESS):
        return True
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", request.node.nodeid],
                          cwd=ROOT, env={**os.environ, OWN_PROCESS: "1"}, capture_output=True, text=True,
                          timeout=570)
    print(done.stdout[-4000:])
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    return False


@pytest.mark.slow
def test_engine_runs_on_the_default_model_stay_flat(own_process, default_model_dir):
    if not own_process:
        return
    from models.open_model import open_model

    model = open_model(default_model_dir, device="cpu")
    engine = model.engine()
    for index in range(WARM_UP):
        one_run(model, engine, index)
    before = measure()
    for index in range(WARM_UP, WARM_UP + SOAK_RUNS):
        one_run(model, engine, index)
    after = measure()
    print(f"engine soak, {SOAK_RUNS} runs: {before} -> {after}")
    assert_flat(before, after)


def settled(window) -> Resources:
    """The window's resources once its autosave is on disk: a run's final state is queued for the autosave thread
    when the run ends, and a write on its way holds a file open (CI once counted that file as a leaked one)."""
    window.autosaver.flush()
    return measure()


@pytest.mark.slow
def test_window_runs_on_the_tiny_model_stay_flat(qtbot, window):
    from tests.gui_helpers import run_and_wait

    for _ in range(WARM_UP):
        run_and_wait(qtbot, window, max_new_tokens=4)
    before = settled(window)
    for index in range(SOAK_RUNS):
        window.prompt.editor.setPlainText(PROMPTS[index % len(PROMPTS)])
        run_and_wait(qtbot, window, max_new_tokens=4)
        assert not window.error_banner.isVisible()
    after = settled(window)
    print(f"window soak, {SOAK_RUNS} runs: {before} -> {after}")
    assert_flat(before, after)


# The GUI thread's own work at a stretch (its CPU time between two event-loop turns) and the wall-clock time
# between two turns. Measured on 2 cores, each soak in its own process: 512-token runs 97-163 ms of its own work
# (the same on the code before this bound, 117-138 ms: the 100 ms bound it had passed by chance), 197-298 ms
# wall-clock; 32-member fan-outs 29-69 ms, 71-162 ms. Its longest stretches are Python's garbage collections
# (full: ~120 ms over a long run's objects, 40-50 ms with start-up's frozen as the app does; young: up to 40 ms)
# besides redraws. Wall-clock it shares the cores and the GIL with the run's thread: up to about twice as long.
# CI once measured 288 ms of own work (427 ms wall-clock) at load 3.2 where this machine, building llama.cpp on
# both cores meanwhile, saw no stretch over 100 ms: a bound near the measurements fails on a busy machine's
# slower cores, not on the code. These bounds catch what the user feels as a hang: a window that computes a
# whole run's worth on its thread (a search, a full redraw per token) or waits on something (a lock, a file).
MAX_STALL_S = 0.5
MAX_WALL_STALL_S = 1.0


class StallWatch:
    """The longest the GUI thread's event loop went without serving a 5 ms timer (a stall the user feels), in
    wall-clock time and in the GUI thread's own CPU time (work done without returning to the event loop: what
    a busy machine's other processes cannot add to)."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.worst = self.worst_busy = 0.0
        self._last = self._last_busy = 0.0
        self._timer = QTimer()
        self._timer.setInterval(5)
        self._timer.timeout.connect(self._tick)

    def __enter__(self) -> StallWatch:
        self._last, self._last_busy = time.monotonic(), time.thread_time()
        self._timer.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._tick()
        self._timer.stop()

    def _tick(self) -> None:
        now, busy = time.monotonic(), time.thread_time()
        self.worst, self._last = max(self.worst, now - self._last), now
        self.worst_busy, self._last_busy = max(self.worst_busy, busy - self._last_busy), busy


def window_as_the_app_starts(make_window, model_dir):
    """A window on `model_dir` with what start-up made frozen, as the app does once its window is up."""
    from gui.app import freeze_startup_objects

    window = make_window(model_dir)
    freeze_startup_objects()
    return window


def soak_the_window(qtbot, window, runs: int, max_new_tokens: int, label: str, warm_up: int = 1) -> None:
    """`warm_up` runs (the model loads, ORT's arenas and the caches grow), then `runs` measured ones."""
    from tests.gui_helpers import run_and_wait

    for _ in range(warm_up):
        run_and_wait(qtbot, window, max_new_tokens=max_new_tokens, timeout_ms=300_000)
    before = settled(window)
    with StallWatch() as watch:
        for _ in range(runs):
            started = time.monotonic()
            run_and_wait(qtbot, window, max_new_tokens=max_new_tokens, timeout_ms=300_000)
            assert not window.error_banner.isVisible() and window.state.notice is None, window.state.notice
            print(f"{label}: run of {window.state.total_tokens()} tokens in {time.monotonic() - started:.1f} s")
    after = settled(window)
    print(f"{label}, {runs} runs: {before} -> {after}; longest event-loop stall {watch.worst * 1000:.0f} ms "
          f"({watch.worst_busy * 1000:.0f} ms of it the GUI thread's own work), load {os.getloadavg()[0]:.1f}")
    assert_flat(before, after)
    assert watch.worst_busy < MAX_STALL_S, f"the GUI thread worked {watch.worst_busy * 1000:.0f} ms at a stretch"
    assert watch.worst < MAX_WALL_STALL_S, f"the window stalled {watch.worst * 1000:.0f} ms"


@pytest.mark.slow
def test_512_token_runs_in_the_window_on_the_default_model_stay_flat_and_never_stall(
        own_process, qtbot, make_window, default_model_dir):
    if not own_process:
        return
    window = window_as_the_app_starts(make_window, default_model_dir)
    window.state.set_specs([LaneSpec("greedy", min_new_tokens=512),
                            LaneSpec("top-p", do_sample=True, top_p=0.9, min_new_tokens=512, seed=1)])
    soak_the_window(qtbot, window, runs=2, max_new_tokens=512, label="512-token runs")
    assert [len(lane.trace.steps) for lane in window.state.lanes] == [512, 512]


@pytest.mark.slow
def test_32_member_fan_outs_in_the_window_on_the_default_model_stay_flat_and_never_stall(
        own_process, qtbot, make_window, default_model_dir):
    if not own_process:
        return
    window = window_as_the_app_starts(make_window, default_model_dir)
    window.state.set_specs([LaneSpec("fan", do_sample=True, temperature=1.2, top_p=0.95, seed=3)])
    window.state.set_fanout(0, 32)
    soak_the_window(qtbot, window, runs=3, max_new_tokens=48, label="32-member fan-outs", warm_up=2)
    assert len(window.state.lanes[0].members) == 32
