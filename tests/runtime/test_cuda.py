"""The same decoder code path on the CUDA EP (KV cache on the GPU, row gather on the GPU) against the CPU EP.
Runs only where CUDA is really active; elsewhere it is skipped with the reason."""

from __future__ import annotations

import numpy as np
import pytest

from runtime.decoder import OnnxDecoder
from runtime.session import DeviceError, cuda_unavailable_reason

REASON = cuda_unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"CUDA not available: {REASON}")


@pytest.fixture(scope="module")
def decoders(tiny_model_dir):
    try:
        gpu = OnnxDecoder(tiny_model_dir, device="cuda")
    except DeviceError as exc:
        pytest.skip(str(exc))
    return gpu, OnnxDecoder(tiny_model_dir, device="cpu")


def test_cuda_is_really_active(decoders):
    gpu, _ = decoders
    assert gpu.provider == "CUDAExecutionProvider" and gpu.device == "cuda"
    state, _ = gpu.prefill([5, 6, 7])
    assert all(value.device_name() == "cuda" for value in state.tensors)


def test_cuda_rows_match_cpu(decoders):
    results = []
    for decoder in decoders:
        state, first = decoder.prefill([5, 17, 42, 99, 7])
        state, a = decoder.step(state, [0, 0, 0], [3, 4, 5])
        state, b = decoder.step(state, [2, 0, 1], [6, 7, 8], [4, None, 5])
        state, c = decoder.step(state, [1, 2], [9, 10])
        results.append([first, a, b, c])
    for gpu_logits, cpu_logits in zip(*results, strict=True):
        np.testing.assert_allclose(gpu_logits, cpu_logits, atol=1e-3, rtol=0)
