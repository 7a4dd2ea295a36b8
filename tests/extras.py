"""Modules of the `prepare` extra (torch, transformers, gguf, …) in tests: wherever the extra is installed (CI
installs it), they must import, so a broken install fails the run instead of silently skipping the parity tests."""

from __future__ import annotations

import importlib
import importlib.metadata
import re
from types import ModuleType

import pytest


def prepare_extra_installed() -> bool:
    """Whether any distribution the project's `prepare` extra requires is installed."""
    requirements = importlib.metadata.requires("branchpoint") or []
    names = [re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0] for r in requirements if 'extra == "prepare"' in r]
    for name in names:
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        return True
    return False


def require_prepare_module(name: str) -> ModuleType:
    """Import `name`; only a machine without the prepare extra skips (the caller's whole module)."""
    if not prepare_extra_installed():
        pytest.skip(f"the prepare extra is not installed (needed: {name})", allow_module_level=True)
    return importlib.import_module(name)
