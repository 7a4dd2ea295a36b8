"""This process's child processes, read from Linux's /proc: checks that a Cancel really ended a child."""

from __future__ import annotations

import os
from pathlib import Path

HAS_PROC = Path("/proc/self/stat").exists()


def _stat_fields(pid: int | str) -> list[str]:
    """/proc/PID/stat after the command name: state, parent pid, …"""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def child_pids(marker: str) -> list[int]:
    """Live (not zombie) children of this process whose command line contains `marker`."""
    found = []
    for folder in Path("/proc").glob("[0-9]*"):
        try:
            state, parent = _stat_fields(folder.name)[:2]
            command = (folder / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # the process ended meanwhile
            continue
        if int(parent) == os.getpid() and state != "Z" and marker in command:
            found.append(int(folder.name))
    return found


def process_gone(pid: int) -> bool:
    """Ended: no such process, or a zombie waiting to be reaped."""
    try:
        return _stat_fields(pid)[0] == "Z"
    except OSError:
        return True
