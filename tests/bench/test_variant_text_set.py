"""The variants bench item's text-set scoreboard (fp32's logits read once) equals the one a variant's manifest
records when it is prepared."""

from __future__ import annotations

import pytest


def test_text_set_scoreboards_match_the_manifest(tmp_path, monkeypatch, tiny_model_dir):
    from bench.variant_items import text_set_scoreboards
    from models import prepare
    from models.catalog import read_manifest
    from models.variants import prepare_variant

    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path / "cache"))
    base = prepare.register_onnx_folder(tiny_model_dir, name="tiny")
    folder = prepare_variant("q8_0", "tiny")
    boards = text_set_scoreboards({"fp32": base, "q8_0": folder})
    recorded = read_manifest(folder)["variant"]["teacher_forced"]
    assert set(boards) == {"q8_0"} and boards["q8_0"]["positions"] == recorded["positions"]
    for key in ("mean_kl", "p99_kl", "same_top", "rms_delta_p", "top10_jaccard"):
        assert boards["q8_0"][key] == pytest.approx(recorded[key], rel=1e-6, abs=1e-12), key
