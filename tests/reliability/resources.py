"""What a long session could leak, measured in this process: resident memory, memory allocated and not freed
(glibc's mallinfo2: resident memory alone hides a leak while it reuses pages freed earlier, e.g. after the
prefill's large buffers), threads (Python's and the OS's: ONNX Runtime's pools are native), open file
descriptors, live ONNX Runtime sessions."""

from __future__ import annotations

import ctypes
import gc
import os
import threading
from dataclasses import dataclass
from pathlib import Path

SOAK_RUNS = int(os.environ.get("BRANCHPOINT_SOAK_RUNS", "200"))  # raise it for a longer soak
MAX_GROWTH_MB = 50.0  # memory the process allocated and has not freed (malloc's in-use bytes: the leak signal)
# Resident memory also holds what glibc's and ONNX Runtime's arenas keep after it was freed (a 32-member fan-out's
# [32, 49152] float rows come and go each step): it may drift more than the allocations without a leak.
MAX_RSS_GROWTH_MB = 100.0


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def allocated_mb() -> float:
    """Heap bytes in use (small blocks and mmapped ones), or 0 where glibc's mallinfo2 is missing."""
    try:
        mallinfo2 = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return 0.0
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return (info.uordblks + info.hblkhd) / 2**20


@dataclass(frozen=True)
class Resources:
    rss_mb: float
    allocated_mb: float
    python_threads: int
    os_threads: int
    open_files: int
    ort_sessions: int


def measure() -> Resources:
    gc.collect()
    status = Path("/proc/self/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    import onnxruntime as ort

    sessions = sum(1 for item in gc.get_objects() if type(item) is ort.InferenceSession)  # no attribute lookups
    return Resources(
        rss_mb=int(fields["VmRSS"].split()[0]) / 1024,
        allocated_mb=allocated_mb(),
        python_threads=threading.active_count(),
        os_threads=int(fields["Threads"]),
        open_files=len(os.listdir("/proc/self/fd")),
        ort_sessions=sessions,
    )


def assert_flat(before: Resources, after: Resources) -> None:
    assert after.rss_mb - before.rss_mb < MAX_RSS_GROWTH_MB, (before, after)
    assert after.allocated_mb - before.allocated_mb < MAX_GROWTH_MB, (before, after)
    assert after.python_threads <= before.python_threads, (before, after)
    assert after.os_threads <= before.os_threads, (before, after)
    assert after.open_files <= before.open_files, (before, after)
    assert after.ort_sessions <= before.ort_sessions, (before, after)
