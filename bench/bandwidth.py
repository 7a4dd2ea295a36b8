"""The memory-bandwidth floor: a decode step must read every weight once, so weight bytes / read bandwidth is
the fastest a step can be on this machine. Bandwidth is measured in the same run, interleaved with the steps it
is compared with: numpy reductions (sum, max, dot) over an array much larger than the caches, with one thread and
with one thread per core (numpy releases the GIL inside reductions); the fastest read gives the strictest floor."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

KERNELS = {"sum": np.sum, "max": np.max, "dot": lambda chunk: np.dot(chunk, chunk)}


class Reader:
    """Reads a `megabytes` float32 array once per call with every kernel on `threads` threads; `best_seconds`
    holds each call's fastest full read."""

    def __init__(self, megabytes: int, threads: int):
        self.data = np.ones(megabytes * 2**20 // 4, dtype=np.float32)
        self.chunks = np.array_split(self.data, threads)
        self.pool = ThreadPoolExecutor(max_workers=threads)
        self._read(np.sum)  # touch the pages once
        self.best_seconds: list[float] = []

    def __call__(self) -> None:
        self.best_seconds.append(min(self._read(kernel) for kernel in KERNELS.values()))

    def _read(self, kernel) -> float:
        start = time.perf_counter()
        list(self.pool.map(kernel, self.chunks))
        return time.perf_counter() - start

    def close(self) -> None:
        self.pool.shutdown()


def readers(megabytes: int) -> dict[str, Reader]:
    """One reader with one thread and, on a multi-core machine, one with a thread per core."""
    cores = os.cpu_count() or 1
    found = {"one thread": Reader(megabytes, 1)}
    if cores > 1:
        found["all cores"] = Reader(megabytes, cores)
    return found


_ONNX_ITEM_SIZE = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 10: 2, 11: 8, 16: 2}


def weight_bytes(model_path: str | Path) -> int:
    """Bytes of the initializers a decode step reads (external data not loaded: sizes come from the dims): all
    but tables that are only looked up by Gather, of which a step reads a row. (A prepared model's graph holds
    the token embeddings for the lookup and, folded by ORT, their transpose for the tied lm_head; the export
    holds the table once and ORT folds the transpose at load. Both read the same bytes per step.)"""
    import onnx

    model = onnx.load(str(model_path), load_external_data=False)
    lookups: dict[str, bool] = {}  # initializer name -> only ever the data input of a Gather
    for node in model.graph.node:
        for position, name in enumerate(node.input):
            lookups[name] = lookups.get(name, True) and node.op_type == "Gather" and position == 0
    total = 0
    for tensor in model.graph.initializer:
        if not lookups.get(tensor.name, False):
            total += int(np.prod(tensor.dims, dtype=np.int64)) * _ONNX_ITEM_SIZE.get(tensor.data_type, 4)
    return total
