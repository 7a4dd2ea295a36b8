"""The memory-bandwidth floor: a decode step must read every weight once, so weight bytes / read bandwidth is
the fastest a step can be on this machine. Bandwidth is measured in the same run (numpy sums over an array
much larger than the caches, best of several repetitions, with one thread and with one thread per core)."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np


def read_bandwidth(megabytes: int = 512, reps: int = 5, threads: int = 1) -> float:
    """Best bytes/second of summing a float32 array of `megabytes`, split over `threads` threads (numpy
    releases the GIL inside reductions)."""
    data = np.ones(megabytes * 2**20 // 4, dtype=np.float32)
    chunks = np.array_split(data, threads)
    best = float("inf")
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(np.sum, chunks))  # touch the pages once before timing
        for _ in range(reps):
            start = time.perf_counter()
            list(pool.map(np.sum, chunks))
            best = min(best, time.perf_counter() - start)
    return data.nbytes / best


def best_read_bandwidth(megabytes: int, reps: int) -> dict[str, float]:
    """Bandwidth in bytes/s with one thread and with one thread per core; `best` is the higher (the stricter
    floor)."""
    cores = os.cpu_count() or 1
    single = read_bandwidth(megabytes, reps, threads=1)
    parallel = read_bandwidth(megabytes, reps, threads=cores) if cores > 1 else single
    return {"single_thread": single, "all_cores": parallel, "best": max(single, parallel)}


_ONNX_ITEM_SIZE = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 10: 2, 11: 8, 16: 2}


def weight_bytes(model_path: str | Path) -> int:
    """Bytes of all initializers of an ONNX model (external data not loaded: sizes come from the dims)."""
    import onnx

    model = onnx.load(str(model_path), load_external_data=False)
    total = 0
    for tensor in model.graph.initializer:
        total += int(np.prod(tensor.dims, dtype=np.int64)) * _ONNX_ITEM_SIZE.get(tensor.data_type, 4)
    return total
