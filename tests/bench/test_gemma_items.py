"""bench's gemma item: skipped in words where gemma-3-270m is not prepared; its own rows (run-file bytes per
lane-step, prepare times from the manifest) measured on the tiny model; the shared items relabelled with gemma's
goals. The item itself runs on the real model in the lead's quiet bench run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.context import QUICK, BenchContext
from bench.gemma_items import gemma_context, prepare_times, relabel, run_file_bytes
from bench.report import Row, SkipItem


def test_the_item_is_skipped_where_gemma_is_not_prepared(tmp_path, monkeypatch, tiny_model_dir):
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path))
    with pytest.raises(SkipItem, match="prepare --catalog gemma-3-270m --accept-license"):
        gemma_context(BenchContext(tiny_model_dir, QUICK))


def test_run_file_bytes_per_lane_step_and_prepare_times(tiny_model_dir: Path, tmp_path):
    row = run_file_bytes(BenchContext(tiny_model_dir, QUICK))
    assert row.unit == "B" and row.value > 100  # each step record holds its top tokens
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"prepare_seconds": {"export": 600.0, "dequantize": 200.0, "setup": 0.1}}))
    rows = prepare_times(BenchContext(tmp_path, QUICK))
    assert [(r.metric, r.value) for r in rows[:3]] == [
        ("prepare --catalog gemma-3-270m, total", 800.1), ("stage export", 600.0), ("stage dequantize", 200.0)]


def test_shared_rows_take_gemmas_goals():
    row = relabel(Row("5 sampler overhead", "decoding/ alone, share of step time", 9.0))
    assert (row.item, row.goal, row.passed) == ("gemma: 5 sampler overhead", "<= 12", True)


def test_the_default_models_goals_are_not_gemmas():
    row = relabel(Row("5 sampler overhead", "decoding/ + row summary share of step time (5 lanes)", 15.0, goal="<= 5"))
    assert (row.goal, row.passed) == ("", None)
    row = relabel(Row("1 side by side", "transformers generate() x5 / Branchpoint (5 lanes x 8 tokens)", 5.0))
    assert (row.goal, row.passed) == (">= 4", True)
