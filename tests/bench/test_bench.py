"""The benchmark suite runs end to end on the tiny model (--quick) and reports every item as finite numbers,
in the printed table and in the JSON file. Timings are not asserted: benchmarks are not timed tests."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ITEMS = "side_by_side,batching,kv,prefill_edit,attention_edit,floor,sampler,llama_sampler,ort_options"


def run_quick(model_dir: Path, tmp_path: Path, items: str, timeout: float = 400) -> tuple[str, dict]:
    """`python -m bench --quick` on `items`: its printed table and its JSON results (it must exit 0)."""
    out = tmp_path / "results.json"
    command = [sys.executable, "-m", "bench", "--quick", "--model", str(model_dir), "--items", items, "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, json.loads(out.read_text(encoding="utf-8"))


def test_quick_bench_reports_every_item(tiny_model_dir: Path, tmp_path: Path):
    printed, results = run_quick(tiny_model_dir, tmp_path, ITEMS)
    assert results["skipped"] == {}
    items = {row["item"].split()[0] for row in results["rows"]}
    assert items == {"1", "2", "3", "4", "5", "5b", "ORT"}
    assert all(math.isfinite(row["value"]) and row["value"] > 0 for row in results["rows"])
    goals = [row for row in results["rows"] if row["goal"]]
    assert all(row["passed"] in (True, False) for row in goals) and len(goals) >= 5
    assert "| 1 side by side |" in printed and results["machine"]["cpu_count"] >= 1
    metrics = {row["metric"] for row in results["rows"]}
    assert "single-row step: default again, made last / default" in metrics  # the session-order control


def test_unknown_item_is_refused(tmp_path: Path):
    command = [sys.executable, "-m", "bench", "--items", "nope", "--out", str(tmp_path / "r.json")]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "unknown item" in done.stderr
    assert not (tmp_path / "r.json").exists()


def test_quick_fanout_item_reports_its_ratio(tiny_model_dir: Path, tmp_path: Path):
    _, results = run_quick(tiny_model_dir, tmp_path, "fanout")
    rows = results["rows"]
    assert {row["item"] for row in rows} == {"7 fan-out"} and len(rows) == 6
    assert all(math.isfinite(row["value"]) and row["value"] > 0 for row in rows)
    (goal,) = [row for row in rows if row["goal"]]
    assert goal["goal"] == "<= 4" and goal["metric"].startswith("fan-out (4 members x 4 tokens) / the lane alone")


def test_quick_startup_item_reports_times_and_ratios_to_the_goals(tiny_model_dir: Path, tmp_path: Path):
    _, results = run_quick(tiny_model_dir, tmp_path, "startup")
    assert results["skipped"] == {}
    rows = {row["metric"]: row for row in results["rows"]}
    assert {row["item"] for row in rows.values()} == {"8 startup"} and len(rows) == 7
    assert all(math.isfinite(row["value"]) and row["value"] > 0 for row in rows.values())
    cli = rows["command line: `run --prompt Hi --max-new-tokens 1`, start to exit (median)"]
    window = rows["window: launch to a ready model (median)"]
    assert rows["command line start-up / its goal (1.5 s)"]["value"] == pytest.approx(cli["value"] / 1.5)
    assert rows["window start-up / its goal (2 s)"]["value"] == pytest.approx(window["value"] / 2)
    assert [row["goal"] for row in rows.values() if row["goal"]] == ["<= 1", "<= 1"]


def test_quick_gui_item_streams_runs_and_fanouts_and_reports_the_stalls(tiny_model_dir: Path, tmp_path: Path):
    """The GUI probe runs the window as a user would (a second run after the first, then close): nothing may
    wait for a click (a modal "Save changes?" once hung it until the timeout)."""
    _, results = run_quick(tiny_model_dir, tmp_path, "gui", timeout=300)
    assert results["skipped"] == {}
    rows = {row["metric"]: row for row in results["rows"]}
    assert rows["largest event-loop stall while 5 lanes stream"]["value"] > 0
    assert rows["tokens streamed per second (5 lanes)"]["value"] > 0
    for shown in ("timeline shown", "its tree shown"):  # a seed fan-out streamed too (4 members at --quick)
        assert rows[f"largest stall while a 4-member fan-out streams ({shown})"]["value"] > 0
    assert rows["member tokens streamed per second (4-member fan-out)"]["value"] > 0


def test_quick_long_prompt_item_reports_its_goals(tiny_model_dir: Path, tmp_path: Path):
    _, results = run_quick(tiny_model_dir, tmp_path, "long_prompts,explain")
    rows = {row["metric"]: row for row in results["rows"]}
    assert {"prefill 64 tokens / transformers' prefill of them", "prefill time per token at 64 / at 16",
            "step at context 64 / at context 16"} <= set(rows)
    assert all(row["passed"] in (True, False) for row in rows.values() if row["goal"])
    assert all(math.isfinite(row["value"]) for row in rows.values())
    explain = [metric for metric in rows if metric.startswith("explain of")]
    if "explain" in results["skipped"]:  # the tiny model has none, unless a test before prepared it
        assert "inspection model is not prepared" in results["skipped"]["explain"] and not explain
    else:
        assert [rows[m]["goal"] for m in explain if m.endswith("tokens / one plain forward over them")] == ["<= 3"]
        assert any(metric.endswith("tokens: logit lens of every position") for metric in explain)


def test_quick_busy_item_reports_each_setting_under_each_load(tiny_model_dir: Path, tmp_path: Path):
    """Quiet, 1 and 2 busy competitors × three thread settings: step and prefill times and the ratios to quiet
    (timings not asserted)."""
    _, results = run_quick(tiny_model_dir, tmp_path, "busy")
    rows = {row["metric"]: row["value"] for row in results["rows"] if row["item"] == "busy machine"}
    for load in ("quiet", "1 busy process", "2 busy processes"):
        for name in ("default (no spinning)", "spinning", "1 thread"):
            assert rows[f"{load}: single-row step, {name}"] > 0
    assert rows["2 busy processes: step / quiet step, 1 thread"] > 0
    assert "quiet: step 1 thread / default (no spinning)" in rows
    assert all(math.isfinite(v) and v > 0 for v in rows.values())


def test_quick_llama_cpp_item_says_why_it_skips_without_a_gguf(tiny_model_dir: Path, tmp_path: Path):
    """The tiny model keeps no GGUF: llama.cpp has nothing to run, and the item says so instead of failing."""
    _, results = run_quick(tiny_model_dir, tmp_path, "llama_cpp")
    assert results["rows"] == [] and "keeps no GGUF" in results["skipped"]["llama_cpp"]


def test_quick_served_item_says_why_it_skips_without_a_server_or_a_gguf(tiny_model_dir: Path, tmp_path: Path):
    """The tiny model keeps no GGUF (and this machine may have no llama-server): skipped, saying which."""
    _, results = run_quick(tiny_model_dir, tmp_path, "served")
    assert results["rows"] == [] and set(results["skipped"]) == {"served"}
    assert "llama-server is not built" in results["skipped"]["served"] or "keeps no" in results["skipped"]["served"]
