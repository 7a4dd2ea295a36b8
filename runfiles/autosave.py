"""Autosave of the run a window shows, so that nothing generated is lost to a crash, a kill -9 or a power loss.

Each process writes its own file, `autosave-<pid>.json` in a folder the caller chooses (the window: a folder of
the platform's user state directory, never the install directory), atomically (runfiles.atomic_write: temp file,
flush, rename, flush of the folder): whenever it is read it is a complete run, the previous one or the new one.
A clean exit discards it. At start, `orphans` lists the autosaves whose process is gone: what a crash left, to
offer for restoring. Another running instance's autosave is never listed, and `claim` makes restoring safe when
two instances start together: it renames the orphan to the claimer's own name, which only one can do.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from decoding.records import jsonio
from decoding.records.trace import RunTrace
from runfiles import run_file
from runfiles.atomic_write import write_text_atomic

NAME = re.compile(r"^autosave-(\d+)\.json$")
TEMP = re.compile(r"^\.autosave-(\d+)\.json\..*\.tmp$")  # write_text_atomic's temp file of one


class Autosave:
    """This process's autosave in `folder` (created on first write)."""

    def __init__(self, folder: str | os.PathLike, pid: int | None = None) -> None:
        self.folder = Path(folder)
        self.pid = os.getpid() if pid is None else pid
        self.path = self.folder / f"autosave-{self.pid}.json"

    def write(self, trace: RunTrace) -> Path:
        """Replace the autosave by `trace`. OSError (disk full, folder not writable) leaves the previous
        autosave as it was; the caller says so and keeps the run in memory."""
        self.folder.mkdir(parents=True, exist_ok=True)
        return write_text_atomic(self.path, jsonio.dumps(trace))

    def discard(self) -> None:
        """Remove the autosave (a clean exit, a restore declined, or the run saved and closed)."""
        self.path.unlink(missing_ok=True)

    def claim(self, orphan: Path) -> Path | None:
        """Take an orphan over for restoring: it becomes this process's autosave (so a crash while restoring
        loses nothing). None when another process claimed it first or it is gone."""
        try:
            os.rename(orphan, self.path)  # atomic: of two claimers, one wins
        except FileNotFoundError:
            return None
        return self.path


def orphans(folder: str | os.PathLike) -> list[Path]:
    """Autosaves whose process is gone, newest first. Their leftover temp files (a kill in the middle of a
    write) are removed on the way."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = []
    for path in folder.iterdir():
        temp = TEMP.match(path.name)
        if temp and not process_alive(int(temp.group(1))):
            path.unlink(missing_ok=True)
            continue
        name = NAME.match(path.name)
        if name and int(name.group(1)) != os.getpid() and not process_alive(int(name.group(1))):
            found.append(path)
    return sorted(found, key=lambda path: path.stat().st_mtime, reverse=True)


def restore(path: Path) -> RunTrace:
    """The run in an autosave (jsonio.TraceFormatError, one line, if the file is damaged)."""
    return run_file.load(path)


def process_alive(pid: int) -> bool:
    if os.name == "nt":  # os.kill(pid, 0) would send CTRL_C_EVENT there
        return _windows_process_alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def _windows_process_alive(pid: int) -> bool:
    import ctypes

    synchronize, still_running = 0x00100000, 0x00000102
    kernel32 = ctypes.windll.kernel32
    handle = kernel32.OpenProcess(synchronize, False, pid)
    if not handle:
        return False
    try:
        return kernel32.WaitForSingleObject(handle, 0) == still_running
    finally:
        kernel32.CloseHandle(handle)
