"""A Branchpoint greedy lane in a process of its own, its decoder the only model session there, as in the app (the
bench item `llama_cpp` drives it beside llama.cpp's worker: two sessions of one model in one process step ~5 % apart
by the order they were made, bench/results.md).

    python bench/lane_worker.py MODEL_DIR DEVICE [THREADS]

Reads requests from stdin, one JSON object a line, each answered on one line of stdout: {"tokens": N} →
{"seconds": s, "ids": [...]}: the wall time of one engine run (the bench prompt, prefill included) of a greedy lane
forced to N tokens (`min_new_tokens`), the tokens it chose. The first line it writes is {"ready": true}."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project, when run as a script


def main(argv: list[str]) -> int:
    from bench.context import FULL, BenchContext
    from bench.llama_cpp_items import timed_greedy

    threads = int(argv[3]) if len(argv) > 3 and int(argv[3]) > 0 else None
    ctx = BenchContext(Path(argv[1]), FULL, device=argv[2], threads=threads)
    _ = ctx.decoder  # loaded and warmed up before the first request
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        seconds, ids = timed_greedy(ctx, int(json.loads(line)["tokens"]))
        print(json.dumps({"seconds": seconds, "ids": ids}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
