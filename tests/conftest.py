"""Shared fixtures: the tiny exported test model, the real default model (CI prepares it), offscreen Qt."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A tiny random-weight Llama exported with optimum (prepared-model layout). Its HF folder (for transformers
    references) sits beside it: `<dir>-hf`."""
    from tests.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny-llama")


@pytest.fixture(scope="session")
def tiny_hf_dir(tiny_model_dir: Path) -> Path:
    return tiny_model_dir.parent / (tiny_model_dir.name + "-hf")


@pytest.fixture(scope="session")
def default_model_dir() -> Path:
    """The prepared default model. CI prepares it before the tests; elsewhere the test is skipped if it is absent."""
    from models.catalog import default_model_dir as find_default

    path = find_default()
    if not (path / "model.onnx").exists():
        if os.environ.get("CI"):
            pytest.fail(f"default model is not prepared at {path} (.ci/run should have prepared it)")
        pytest.skip(f"default model not prepared at {path}; run `python main.py prepare`")
    return path
