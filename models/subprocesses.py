"""Child processes (pip download, the export worker) that a Cancel or Ctrl-C kills promptly."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

from models.errors import PickledWeightsRefused, PrepareError
from models.progress import Stages

PROJECT_ROOT = Path(__file__).resolve().parent.parent
WORKER_MARK = "@@bp "


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ) | (extra or {})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def run_child(cmd: list[str], stages: Stages, log_path: Path, what: str, env: dict[str, str] | None = None) -> None:
    """Run cmd, forwarding worker progress lines to `stages`; kill it on cancel / Ctrl-C. Raises PrepareError
    naming the stage (the worker may move through several) and the cause. `env`: variables added to the child's
    environment (a token: never on the command line, which the log records)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"$ {' '.join(cmd)}\n")
        log.flush()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, env=child_env(env), bufsize=1)
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=pump, args=(proc.stdout, lines), daemon=True).start()
        try:
            error, refusal = follow(proc, lines, stages, log)
        except BaseException:
            stop(proc)
            raise
    if refusal == "pickled-weights":
        raise PickledWeightsRefused(stages.current, error)
    if error or proc.returncode != 0:
        cause = error or f"{what} exited with code {proc.returncode}: {last_line(log_path)}"
        raise PrepareError(stages.current, f"{cause} (log: {log_path})")


def pump(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def follow(proc: subprocess.Popen, lines: queue.Queue, stages: Stages, log) -> tuple[str | None, str | None]:
    """Handle the child's stdout until it ends; returns the error it reported and its kind of refusal, if any."""
    error = refusal = None
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
        refusal = event.get("refusal") or refusal
        message = event.get("message", message)
        stages.report(event.get("fraction", 0.0), message)
        if "bytes" in event and stages.on_bytes is not None:
            stages.on_bytes(*event["bytes"])
    proc.wait()
    return error, refusal


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
