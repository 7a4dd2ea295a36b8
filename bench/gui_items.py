"""Item 6: GUI responsiveness, each measured in a fresh process (bench/gui_probe.py) on the offscreen
platform unless a display is set: launch-to-visible-window time (as the app starts: the model then loads),
and the largest event-loop stall while a 5-lane run, or a seed fan-out, streams into the window."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.context import BenchContext
from bench.report import Row, SkipItem

PROBE = Path(__file__).with_name("gui_probe.py")


def gui_unavailable_reason() -> str | None:
    try:
        import PySide6  # noqa: F401 - only to know whether the GUI can run here
    except ImportError as error:
        return f"PySide6 is not importable: {error}"
    return None


def probe(args: list[str], timeout: float) -> tuple[dict, float]:
    """(the probe's JSON line, wall time.time() just before it was started)."""
    env = dict(os.environ)
    if not env.get("DISPLAY") and not env.get("WAYLAND_DISPLAY"):
        env["QT_QPA_PLATFORM"] = "offscreen"
    started = time.time()
    done = subprocess.run([sys.executable, str(PROBE), *args], capture_output=True, text=True, env=env, timeout=timeout)
    if done.returncode != 0:
        raise SkipItem(f"GUI probe failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]), started


def measure_gui(ctx: BenchContext) -> list[Row]:
    reason = gui_unavailable_reason()
    if reason is not None:
        raise SkipItem(reason)
    model = str(ctx.model_dir)
    launches = []
    for _ in range(max(1, min(3, ctx.sizes.run_reps))):
        result, started = probe(["launch", "--model", model], timeout=120)
        launches.append(result["visible_at"] - started)
    stall, _ = probe(["stall", "--model", model, "--tokens", str(ctx.sizes.gui_tokens)], timeout=900)
    item = "6 GUI"
    streaming, first = stall["streaming"], stall["first_run"]
    return [
        Row(
            item,
            "largest event-loop stall while 5 lanes stream",
            streaming["max_gap_ms"],
            unit="ms",
            goal="< 50",
        ),
        Row(item, "launch to visible window (median)", statistics.median(launches), unit="s", goal="< 2"),
        Row(item, "99th percentile heartbeat gap while streaming", streaming["p99_gap_ms"], unit="ms"),
        *[
            Row(item, f"longest MainWindow.{name} call while streaming", ms, unit="ms")
            for name, ms in streaming["longest_slot_ms"].items()
        ],
        Row(item, "largest stall in the first run (model load included)", first["max_gap_ms"], unit="ms"),
        Row(
            item,
            "tokens streamed per second (5 lanes)",
            streaming["tokens"] / streaming["seconds"],
            unit="tok/s",
        ),
        *_fanout_rows(ctx, model, item),
    ]


def _fanout_rows(ctx: BenchContext, model: str, item: str) -> list[Row]:
    """The largest stall while a seed fan-out streams, with the timeline shown and with its own tree shown."""
    members, rows = ctx.sizes.fanout_members, []
    for tab, shown in ((None, "timeline shown"), ("fanout", "its tree shown")):
        args = ["stall", "--model", model, "--tokens", str(ctx.sizes.gui_tokens), "--fanout", str(members)]
        result, _ = probe(args + (["--tab", tab] if tab else []), timeout=900)
        streaming = result["streaming"]
        rows.append(Row(item, f"largest stall while a {members}-member fan-out streams ({shown})",
                        streaming["max_gap_ms"], unit="ms"))
        if tab is None:
            rows.append(Row(item, f"member tokens streamed per second ({members}-member fan-out)",
                            streaming["tokens"] / streaming["seconds"], unit="tok/s"))
    return rows
