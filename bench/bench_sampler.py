"""Micro-benchmark of decoding/'s per-step work: processors, selection and step statistics.

Five lanes (greedy, top-k 50, top-p 0.9, temperature 1.3, min-p 0.05), each: its processors, its selector and
the raw + processed statistics of a StepRecord; plus a beam-4 lane's per-step array work (log-softmax of four
rows and the best 2 * num_beams candidates). Vocabulary 49 152, LM-like synthetic logits (a Zipf-shaped
distribution), a fresh row per step. Prints milliseconds per step: median and fastest step (the fastest is
the better estimate on a shared, busy machine).

    python -m bench.bench_sampler [--steps 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from decoding.processors import apply_processors, build_processors, top_candidates
from decoding.selectors import Sampler, greedy
from decoding.stats import step_stats

VOCAB = 49152
PROMPT = 40
LANES = {
    "greedy": {},
    "top-k 50": {"do_sample": True, "top_k": 50},
    "top-p 0.9": {"do_sample": True, "top_p": 0.9},
    "T 1.3": {"do_sample": True, "temperature": 1.3},
    "min-p 0.05": {"do_sample": True, "min_p": 0.05},
}
BEAMS = 4


def lm_like_logits(rng: np.random.Generator, rows: int) -> np.ndarray:
    rank = np.arange(1, VOCAB + 1)
    base = 11.0 - 2.0 * np.log(rank)
    shuffled = [rng.permutation(base + rng.standard_normal(VOCAB)) for _ in range(rows)]
    return np.stack(shuffled).astype(np.float32)


def lane_step(config: dict, sampler: Sampler | None, ids: np.ndarray, raw: np.ndarray) -> None:
    processors = build_processors(config, PROMPT, [2], 1)
    processed = apply_processors(processors, ids, raw[None])[0] if processors else raw
    token = sampler.draw(processed).token_id if sampler else int(greedy(processed[None])[0])
    step_stats(raw, processed, token, 20, str)


def beam_step(raw: np.ndarray) -> None:
    shifted = raw - raw.max(axis=1, keepdims=True)
    logprobs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    top_candidates(logprobs.ravel(), 2 * BEAMS)


def measure(steps: int) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(0)
    samplers = {name: Sampler(i) if config.get("do_sample") else None for i, (name, config) in enumerate(LANES.items())}
    ids = rng.integers(0, VOCAB, (1, PROMPT + 10))
    times: dict[str, list[float]] = {name: [] for name in [*LANES, "beam-4 rows"]}
    for _ in range(steps):
        logits = lm_like_logits(rng, len(LANES) + BEAMS)
        for row, (name, config) in enumerate(LANES.items()):
            started = time.perf_counter()
            lane_step(config, samplers[name], ids, logits[row])
            times[name].append(time.perf_counter() - started)
        started = time.perf_counter()
        beam_step(logits[len(LANES) :])
        times["beam-4 rows"].append(time.perf_counter() - started)
    return {name: (float(np.median(v)) * 1000, float(np.min(v)) * 1000) for name, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    results = measure(args.steps)
    print(f"{'':>12}  median ms   min ms")
    for name, (median, fastest) in results.items():
        print(f"{name:>12}: {median:9.3f} {fastest:8.3f}")
    total_median = sum(m for m, _ in results.values())
    total_min = sum(f for _, f in results.values())
    print(f"{'per step':>12}: {total_median:9.3f} {total_min:8.3f}  (5 lanes + {BEAMS} beam rows)")


if __name__ == "__main__":
    main()
