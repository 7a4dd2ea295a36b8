"""`main.py prepare --hub` against tests/hub_server.py: its flags, and a refusal as one line with exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest

import main
from tests.hub_server import Repo, folder_files


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("BRANCHPOINT_CACHE_DIR", str(root))
    return root


def test_hub_flags_apply_to_hub_only(cache, capsys):
    assert main.main(["prepare", "--revision", "v1"]) == 2
    assert "--revision and --allow-pickled-weights apply to --hub" in capsys.readouterr().err
    assert main.main(["prepare", "--hub", "not an id"]) == 2
    assert "--hub 'not an id' is not a Hugging Face model id" in capsys.readouterr().err


def test_pickled_only_repository_is_refused_naming_the_flag(cache, hub_server, tiny_hf_dir, capsys):
    files = folder_files(tiny_hf_dir)
    files["pytorch_model.bin"] = files.pop("model.safetensors")  # never read: refused from the listing
    hub_server.add("test-org/pickled", Repo(files))
    assert main.main(["prepare", "--hub", "test-org/pickled"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("branchpoint: test-org/pickled has only pickled PyTorch weights (pytorch_model.bin)")
    assert "--allow-pickled-weights" in err
    assert not (cache / "models" / "pickled").exists()
