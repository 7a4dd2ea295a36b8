"""Writing a file atomically: a reader (or a crash) sees the old file or the new one, never a part of one. Used by
run files (decoding.records.jsonio), explain files (decoding.records.explain) and the autosave (runfiles.autosave)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_text_atomic(path: Path, text: str) -> Path:
    """`text` into `path` or nothing: a temp file `.NAME.*.tmp` beside it, flushed to disk, renamed over it, and
    the rename itself flushed (POSIX). A failure (disk full, no permission) removes the temp file and leaves the
    previous `path` as it was; a crash or power loss leaves the old file or the new one, and at most the temp
    file."""
    folder = path.resolve().parent
    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as temp:
            temp.write(text)
            temp.flush()
            os.fsync(temp.fileno())
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    _sync_folder(folder)
    return path


def _sync_folder(folder: Path) -> None:
    """Make a rename in `folder` durable (POSIX; Windows has no folder handles to flush)."""
    if os.name == "nt":
        return
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
