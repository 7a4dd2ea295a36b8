"""bench/llama_cpp_items without llama.cpp: a greedy lane in a process of its own (bench/lane_worker.py, its decoder
the only session there) answers with its tokens and wall times, and the goal row is read on that lane when it was
timed, on the fastest in-process GGUF-blocks lane otherwise."""

from __future__ import annotations

from pathlib import Path

from bench.llama_cpp_items import ALONE, LaneWorker, Run, paired_run, rows


def test_a_lane_alone_in_its_process_answers_with_its_tokens(tiny_model_dir: Path):
    worker = LaneWorker(tiny_model_dir, "cpu", None)
    try:
        run = paired_run(worker.greedy, 5)
        again = paired_run(worker.greedy, 5)
    finally:
        worker.close()
    assert len(run.ids) == 5 and run.ids == again.ids  # greedy: the same tokens every time
    assert run.long > 0 and run.short > 0
    assert worker.process.returncode == 0


def runs(**per_token_ms: float) -> dict[str, list[Run]]:
    """Synthetic rounds: a 1-token run of 1 s, a 5-token one 4 × `ms` longer, the same tokens."""
    return {name: [Run(1 + 4 * ms / 1e3, 1.0, [1, 2, 3, 4, 5])] for name, ms in per_token_ms.items()}


def goals(table) -> dict[str, str]:
    return {row.metric: row.goal for row in table if row.goal}


def test_the_goal_is_read_on_the_lane_alone_when_it_ran():
    both = rows(runs(**{"llama.cpp": 10.0, "ggml": 11.0, "gguf": 20.0, ALONE: 12.0}), 5)
    assert goals(both) == {f"{ALONE} / llama.cpp, per token": "<= 1"}
    alone_row = next(row for row in both if row.metric == f"{ALONE} / llama.cpp, per token")
    assert abs(alone_row.value - 1.2) < 1e-9
    assert any(row.metric == "fastest GGUF-blocks lane (ggml) / llama.cpp, per token" for row in both)
    in_process = rows(runs(**{"llama.cpp": 10.0, "ggml": 11.0, "gguf": 20.0}), 5)
    assert goals(in_process) == {"fastest GGUF-blocks lane (ggml) / llama.cpp, per token": "<= 1"}
