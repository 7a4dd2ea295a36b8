"""`main.py catalog` and `main.py prepare --catalog NAME`: the models Branchpoint prepares by name, the licences
that must be accepted first (nothing is downloaded before), and the licence a prepared model records."""

from __future__ import annotations

import json

import main
from models.catalog import CATALOG, DEFAULT_MODEL_NAME, catalog_entry, catalog_models_writing


def test_catalog_lists_every_entry_with_its_licence_source_size_and_status(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path))
    assert main.main(["catalog"]) == 0
    out = capsys.readouterr().out
    for entry in CATALOG:
        assert entry.name in out
    assert "SmolLM2-135M-Instruct (default)" in out
    assert "Gemma Terms of Use (accept to prepare)" in out
    assert "Hugging Face hub Qwen/Qwen3-0.6B (needs network)" in out
    assert main.main(["catalog", "--json"]) == 0
    records = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    gemma = records["gemma-3-270m"]
    assert gemma["languages"] == ["en", "zh", "multilingual"] and gemma["must_accept_licence"]
    assert gemma["download_bytes"] == 238_203_400 and not gemma["needs_network"] and not gemma["prepared"]
    assert "GEMMA_TERMS.html" in gemma["licence_text"]
    assert [n for n, r in records.items() if r["needs_network"]] == [
        "Qwen2.5-0.5B-Instruct", "Qwen3-0.6B", "gemma-3-270m-it", "Llama-3.2-1B-Instruct"]


def test_a_licensed_entry_needs_accept_license_and_nothing_is_downloaded(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path))
    assert main.main(["prepare", "--catalog", "gemma-3-270m"]) == 2
    err = capsys.readouterr().err
    assert "Gemma Terms of Use" in err and "https://ai.google.dev/gemma/terms" in err and "--accept-license" in err
    assert not (tmp_path / "models").exists()
    assert main.main(["prepare", "--catalog", "Llama-3.2-1B-Instruct"]) == 2
    assert "Llama 3.2 Community License" in capsys.readouterr().err


def test_an_unknown_entry_and_misplaced_flags_are_refused_in_words(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path))
    assert main.main(["prepare", "--catalog", "gpt-5"]) == 2
    assert "no catalog entry 'gpt-5'; the catalog has: SmolLM2-135M-Instruct, gemma-3-270m" in capsys.readouterr().err
    assert main.main(["prepare", "--accept-license"]) == 2
    assert "--accept-license applies to --catalog" in capsys.readouterr().err
    assert main.main(["prepare", "--catalog", "gemma-3-270m", "--name", "x"]) == 2
    assert "under its own name" in capsys.readouterr().err


def test_the_default_stays_the_default_and_chinese_writers_are_offline_first(tmp_path, monkeypatch):
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(tmp_path))
    assert CATALOG[0].name == DEFAULT_MODEL_NAME and catalog_entry("smollm2-135m-instruct") is CATALOG[0]
    writers = catalog_models_writing("zh")
    assert writers[0].name == "gemma-3-270m" and all(w.writes("zh") for w in writers)
    assert DEFAULT_MODEL_NAME not in [w.name for w in writers]


def test_models_shows_the_licence_a_manifest_records(tmp_path, monkeypatch, capsys):
    from cli.models_command import licence_of

    assert licence_of({"licence": {"name": "Gemma Terms of Use", "accepted": True}}) == "Gemma Terms of Use (accepted)"
    assert licence_of({"source": {"kind": "pypi-wheel", "license": "Apache-2.0"}}) == "Apache-2.0"
    assert licence_of({"source": {"kind": "variant", "base": "x"}}) == "as its base"
