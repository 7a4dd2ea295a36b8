"""ONNX Runtime sessions and the choice of execution provider.

onnxruntime-gpu silently falls back to the CPU EP when CUDA cannot load (seen on a GPU-less machine: it still
lists CUDAExecutionProvider as available, and a session asking for CUDA runs on the CPU after logging a libcublasLt
error), so the provider really in use is always read back from the session, never assumed from what was asked
for.
"""

from __future__ import annotations

import ctypes
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import onnxruntime as ort

DEVICES = ("auto", "cpu", "cuda")
CUDA_EP = "CUDAExecutionProvider"
CPU_EP = "CPUExecutionProvider"


class DeviceError(RuntimeError):
    """The requested device cannot be used (e.g. `cuda` asked for, but the CUDA EP is not active)."""


class ModelError(ValueError):
    """A model file ONNX Runtime cannot load or run: damaged, not ONNX, or not the graph the code expects."""


def ort_errors() -> tuple[type[Exception], ...]:
    """The exception classes ONNX Runtime raises; none of them derives from a Python error such as RuntimeError."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    found = (value for value in vars(state).values() if isinstance(value, type) and issubclass(value, Exception))
    return tuple(cls for cls in found if cls.__module__ == state.__name__)


def ort_message(exc: Exception) -> str:
    """The first line of an ONNX Runtime error, without its "[ONNXRuntimeError] : 7 : " prefix."""
    line = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
    return re.sub(r"^\[ONNXRuntimeError\] : \d+ : ", "", line)


@dataclass(frozen=True)
class Placement:
    """Where a session runs: the active provider and the matching OrtValue device ("cuda" or "cpu")."""

    provider: str
    device: str
    device_id: int = 0


CPU = Placement(CPU_EP, "cpu")
CUDA = Placement(CUDA_EP, "cuda")


# Worker threads that sleep when out of work instead of spinning: users run a browser or an IDE beside the app, and
# spinning workers then fight it for the cores. Measured on the default model (2 cores, interleaved, bench item
# `busy`): a single-row step 1.05x (fp32) to 1.09x (ggml) the spinning one's on a quiet machine (the lean graph took
# 7-10 % off first), but 1.5x instead of 1.7-2.4x its quiet time beside one busy process, 2.1x instead of 2.8x beside
# two. CUDA sessions keep ORT's default (their CPU threads only launch kernels).
CPU_SPINNING = False


def session_options(threads: int | None = None, spinning: bool = True) -> ort.SessionOptions:
    """Full graph optimisation; intra-op threads default to ORT's choice (the number of physical cores), which
    measured fastest here (1 thread is ~1.3x slower than 2 on a 2-core machine). `spinning=False`: worker
    threads sleep as soon as they run out of work instead of busy-waiting for more.

    No memory-reuse plan: planning which intermediate tensors share buffers took ~0.55 s of CPU time when the
    default model's session was created, and runs are as fast without it (ORT's arena recycles freed buffers),
    with the same logits bit for bit; peak memory after a 1000-token prefill grew by ~64 MB."""
    options = ort.SessionOptions()
    options.enable_mem_reuse = False
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if threads is not None:
        if threads < 0:
            raise ValueError(f"threads must be >= 0 (0 = ORT default), got {threads}")
        options.intra_op_num_threads = threads
    return options


def cuda_unavailable_reason() -> str | None:
    """Why the CUDA EP cannot even be tried, or None when it is worth trying."""
    if CUDA_EP not in ort.get_available_providers():
        return f"this onnxruntime build ({ort.__version__}) has no CUDA EP (needs onnxruntime-gpu)"
    driver = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
    try:
        ctypes.CDLL(driver)
    except OSError:
        return f"no NVIDIA driver found ({driver} cannot be loaded)"
    return None


def _try_cuda_session(model: str | bytes, options: ort.SessionOptions) -> ort.InferenceSession:
    if hasattr(ort, "preload_dlls"):
        ort.preload_dlls()  # CUDA/cuDNN from the pip NVIDIA wheels (the `cuda` extra), if installed
    return ort.InferenceSession(model, options, providers=[(CUDA_EP, {"device_id": 0}), CPU_EP])


def create_session(
    model: str | Path | bytes,
    device: str = "auto",
    threads: int | None = None,
    spinning: bool | None = None,
    external_data_dir: Path | None = None,
) -> tuple[ort.InferenceSession, Placement]:
    """Create an InferenceSession on `device` ("auto", "cpu" or "cuda") and report where it really runs.

    "cuda" raises DeviceError unless the CUDA EP is really active; "auto" takes CUDA when it is, else CPU.
    `spinning`: None for each provider's measured default (CPU_SPINNING on the CPU, ORT's own on CUDA); False for
    sessions run once in a while beside the decoder (see session_options).
    `external_data_dir`: where a graph given as bytes finds its external weights files."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    model = str(model) if isinstance(model, Path) else model

    def options(spin_by_default: bool) -> ort.SessionOptions:
        made = session_options(threads, spin_by_default if spinning is None else spinning)
        if external_data_dir is not None:
            made.add_session_config_entry("session.model_external_initializers_file_folder_path",
                                          str(external_data_dir))
        return made

    if device != "cpu":
        reason = cuda_unavailable_reason()
        if reason is None:
            session = _try_cuda_session(model, options(True))
            if session.get_providers()[0] == CUDA_EP:
                return session, CUDA
            reason = (
                "ONNX Runtime could not load the CUDA EP and fell back to CPU (check the CUDA and cuDNN 9 "
                "libraries, e.g. `pip install 'onnxruntime-gpu[cuda,cudnn]'`)"
            )
        if device == "cuda":
            raise DeviceError(f"device 'cuda' requested but CUDA is not active: {reason}. Use --device cpu or auto.")
    try:
        return ort.InferenceSession(model, options(CPU_SPINNING), providers=[CPU_EP]), CPU
    except ort_errors() as exc:
        where = model if isinstance(model, str) else "a model given as bytes"
        raise ModelError(f"ONNX Runtime cannot load {where} (damaged or not ONNX?): {ort_message(exc)}") from exc


def create_helper_session(model: bytes, placement: Placement, parallel: bool = False) -> ort.InferenceSession:
    """A small helper graph on the same provider as the main session (so its tensors stay on that device).

    A helper's worker threads must not spin after its run: they would take a core from the main session's
    next run (measured: an 8-row step after a beam reorder took 1.9x as long). So a helper runs on the calling
    thread alone, or, `parallel`, on ORT's default threads that sleep as soon as the run ends (worth it for
    compute-bound helpers: the row summary takes 0.65 instead of 1.0 ms for 8 rows)."""
    providers = [(CUDA_EP, {"device_id": placement.device_id}), CPU_EP] if placement == CUDA else [CPU_EP]
    options = session_options(spinning=False) if parallel else session_options(threads=1)
    return ort.InferenceSession(model, options, providers=providers)
