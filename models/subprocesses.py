"""Child processes (pip download, the export worker) that a Cancel or Ctrl-C kills promptly."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

from models.errors import PrepareError
from models.progress import Stages

PROJECT_ROOT = Path(__file__).resolve().parent.parent
WORKER_MARK = "@@bp "


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def run_child(cmd: list[str], stages: Stages, log_path: Path, what: str) -> None:
    """Run cmd, forwarding worker progress lines to `stages`; kill it on cancel / Ctrl-C. Raises PrepareError
    naming the stage (the worker may move through several) and the cause."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"$ {' '.join(cmd)}\n")
        log.flush()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, env=child_env(), bufsize=1)
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=pump, args=(proc.stdout, lines), daemon=True).start()
        try:
            error = follow(proc, lines, stages, log)
        except BaseException:
            stop(proc)
            raise
    if error or proc.returncode != 0:
        cause = error or f"{what} exited with code {proc.returncode}: {last_line(log_path)}"
        raise PrepareError(stages.current, f"{cause} (log: {log_path})")


def pump(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def follow(proc: subprocess.Popen, lines: queue.Queue, stages: Stages, log) -> str | None:
    """Handle the child's stdout until it ends; returns the error it reported, if any."""
    error = None
    message = stages.current
    while True:
        stages.check_cancel()
        try:
            line = lines.get(timeout=0.1)
        except queue.Empty:
            stages.tick(message)
            continue
        if line is None:
            break
        if not line.startswith(WORKER_MARK):
            log.write(line)
            continue
        event = json.loads(line[len(WORKER_MARK) :])
        if event["stage"] != stages.current:
            stages.enter(event["stage"], event.get("message", ""))
        error = event.get("error") or error
        message = event.get("message", message)
        stages.report(event.get("fraction", 0.0), message)
    proc.wait()
    return error


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def last_line(log_path: Path) -> str:
    """The child's last error line (pip and Python tracebacks end with one), else its last line."""
    text = log_path.read_text(encoding="utf-8", errors="replace")
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    errors = [x for x in lines if x.startswith("ERROR") or x.split(":")[0].endswith(("Error", "Exception"))]
    return (errors or lines or ["no output"])[-1]


def python_module(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]
