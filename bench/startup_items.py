"""Item 8, start-up: from a command to its first token, and from launching the window to a ready model, each in
fresh processes started one after the other (the model's files already in the page cache, as on any start but
the first after a reboot); plus what creating the model's ONNX Runtime session costs with and without ORT's
memory-reuse plan (runtime.session.session_options leaves it off), interleaved in this process."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.context import BenchContext
from bench.gui_items import gui_unavailable_reason, probe
from bench.report import Row
from bench.timing import interleaved, paired_ratio

ROOT = Path(__file__).resolve().parents[1]
CLI_GOAL_S = 1.5
WINDOW_GOAL_S = 2.0
ITEM = "8 startup"


def cli_seconds(ctx: BenchContext) -> float:
    """Wall time of `main.py run --prompt Hi --max-new-tokens 1` from starting the process to its exit (the
    first token is its last piece of work)."""
    command = [sys.executable, str(ROOT / "main.py"), "run", "--prompt", "Hi", "--max-new-tokens", "1"]
    command += ["--model", str(ctx.model_dir), "--device", ctx.device]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"`{' '.join(command[1:])}` failed: {done.stderr.strip()[-500:]}")
    return seconds


def measure_startup(ctx: BenchContext) -> list[Row]:
    reps = max(1, min(3, ctx.sizes.run_reps))
    no_window = gui_unavailable_reason()
    window = no_window is None
    cli, visible, ready = [], [], []
    for _ in range(reps):  # alternated, so both see the same load
        cli.append(cli_seconds(ctx))
        if window:
            result, started = probe(["launch", "--model", str(ctx.model_dir)], timeout=120)
            visible.append(result["visible_at"] - started)
            if result["ready_at"] is None:
                raise RuntimeError("the window's model did not load (see `python main.py --gui-model ...`)")
            ready.append(result["ready_at"] - started)
    cli_s = statistics.median(cli)
    rows = [
        Row(ITEM, "command line: `run --prompt Hi --max-new-tokens 1`, start to exit (median)", cli_s, unit="s"),
        Row(
            ITEM,
            f"command line start-up / its goal ({CLI_GOAL_S:g} s)",
            cli_s / CLI_GOAL_S,
            goal="<= 1",
            note="" if window else f"window not measured: {no_window}",
        ),
    ]
    if window:
        ready_s = statistics.median(ready)
        rows += [
            Row(ITEM, "window: launch to a ready model (median)", ready_s, unit="s"),
            Row(ITEM, f"window start-up / its goal ({WINDOW_GOAL_S:g} s)", ready_s / WINDOW_GOAL_S, goal="<= 1"),
            Row(ITEM, "window: launch to visible window (median)", statistics.median(visible), unit="s"),
        ]
    return rows + session_rows(ctx, reps)


def session_rows(ctx: BenchContext, reps: int) -> list[Row]:
    """Creating the model's main session as the decoder does, and with ORT's memory-reuse plan turned on."""
    from runtime import session

    model = ctx.model_dir / "model.onnx"

    def create(reuse: bool):
        def run() -> None:
            options = session.session_options(ctx.threads)
            options.enable_mem_reuse = reuse
            session.ort.InferenceSession(str(model), options, providers=[session.CPU_EP])

        return run

    samples = interleaved({"as decoder": create(False), "memory-reuse plan": create(True)}, reps, warmup=0)
    return [
        Row(ITEM, "model session creation (CPU EP, median)", statistics.median(samples["as decoder"]), unit="s"),
        Row(
            ITEM,
            "session creation with ORT's memory-reuse plan / without",
            paired_ratio(samples, "memory-reuse plan", "as decoder"),
        ),
    ]
