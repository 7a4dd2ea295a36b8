"""Timing helpers that survive a shared, noisy machine: warm-up calls, medians over repetitions, and
candidates measured interleaved (A, B, A, B, ... with the order rotated each round) so that load from other
processes hits every candidate alike and the ratios stay meaningful even when absolute times drift."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

# Seconds to pause before each call when the candidates are different ONNX Runtime sessions (or torch): the
# worker threads of the one before may still spin and, on few cores, slow this one (measured up to 1.9x).
SESSION_SETTLE = 0.05


def elapsed(fn: Callable[[], object]) -> float:
    """Wall seconds of one call."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def median_time(fn: Callable[[], object], reps: int, warmup: int = 1) -> float:
    """Median wall seconds of `reps` calls after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    return statistics.median(elapsed(fn) for _ in range(max(1, reps)))


def interleaved(
    candidates: dict[str, Callable[[], object]], reps: int, warmup: int = 1, settle: float = 0.0
) -> dict[str, list[float]]:
    """Seconds per call of every candidate, measured round-robin with a rotating order (all samples).
    `settle`: seconds to pause (untimed) before each call, so that the worker threads of the candidate before
    (another ONNX Runtime session) have stopped spinning and do not slow this one."""
    names = list(candidates)
    for _ in range(warmup):
        for name in names:
            candidates[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(max(1, reps)):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            time.sleep(settle)
            samples[name].append(elapsed(candidates[name]))
    return samples


def medians(samples: dict[str, list[float]]) -> dict[str, float]:
    return {name: statistics.median(values) for name, values in samples.items()}


def paired_ratio(samples: dict[str, list[float]], numerator: str, denominator: str) -> float:
    """Median of the per-round ratios numerator/denominator: each round's pair ran back to back under the same
    load, so this is steadier than the ratio of two medians."""
    pairs = zip(samples[numerator], samples[denominator], strict=True)
    return statistics.median(a / b for a, b in pairs)
