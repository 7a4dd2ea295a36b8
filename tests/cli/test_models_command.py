"""`main.py prepare` and `main.py models`: one clear line and exit code 2 on errors; the model table."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

import main
from models import prepare


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(root))
    return root


def test_prepare_error_is_one_line_and_exit_2(cache, tmp_path, capsys):
    assert main.main(["prepare", "--gguf", str(tmp_path / "missing.gguf")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("branchpoint: ")
    assert err[0].endswith("missing.gguf is not a file")


def test_name_is_refused_for_the_default_model(cache, capsys):
    assert main.main(["prepare", "--name", "other"]) == 2
    assert "--name applies to" in capsys.readouterr().err


def test_sources_are_exclusive(cache, tmp_path):
    with pytest.raises(SystemExit) as info:
        main.main(["prepare", "--gguf", "a.gguf", "--hub", "org/model"])
    assert info.value.code == 2


def test_models_lists_prepared_models(cache, tiny_model_dir, capsys):
    assert main.main(["models"]) == 0
    assert "no prepared models in" in capsys.readouterr().out
    prepare.register_onnx_folder(tiny_model_dir, name="tiny")
    assert main.main(["models"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["NAME", "PRECISION", "SIZE", "SOURCE", "LICENCE", "CREATED", "PROVIDERS", "STATUS"]
    row = out[1]
    assert row.split()[:2] == ["tiny", "fp32"] and "onnx-folder:" in row and "CPU" in row and row.endswith("ok")


def test_models_json(cache, tiny_model_dir, capsys):
    import json

    prepare.register_onnx_folder(tiny_model_dir, name="tiny")
    assert main.main(["models", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in records] == ["tiny"]
    assert records[0]["valid"] and records[0]["size_bytes"] > 0 and records[0]["providers"].startswith("CPU")


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_redraws_one_line_on_a_terminal():
    from cli.prepare_command import StageProgress

    stream = FakeTerminal()
    bar = StageProgress(stream)
    bar("export", 0.5, "exporting")
    bar("install", 1.0, "install done")
    bar.close()
    frames = stream.getvalue().split("\r")[1:]
    assert frames[0].startswith("[" + "#" * 15 + "." * 15 + "]  50% export: exporting")
    assert frames[1].startswith("[" + "#" * 30 + "] 100% install: install done")
    assert stream.getvalue().endswith("\n") and stream.getvalue().count("\n") == 1
