"""llama.cpp's Python bindings (llama-cpp-python's ctypes module and its shared library) for tests that use
llama.cpp as their oracle: the installed `llama_cpp`, else the build scripts/llama_cpp.sh leaves in the cache
(${XDG_CACHE_HOME:-~/.cache}/branchpoint/llama.cpp/<version>/python). A test without either is skipped, the reason
saying what is missing and how to get it."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

VERSION = "0.3.36"  # llama-cpp-python's, as scripts/llama_cpp.sh builds it


def built_bindings() -> Path | None:
    """The bindings scripts/llama_cpp.sh built (its `.built` stamp written last), or None."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "branchpoint" / "llama.cpp" / VERSION
    return root / "python" if (root / ".built").is_file() and (root / "python" / "llama_cpp").is_dir() else None


def load_llama_cpp() -> ModuleType:
    """`llama_cpp.llama_cpp` (the low-level API: llama_sampler_*, llama_token_data_array), or pytest.skip naming
    what is missing."""
    try:
        return importlib.import_module("llama_cpp.llama_cpp")
    except ImportError as error:  # not installed (or its library missing): the cached build, if there is one
        installed_error = error
    built = built_bindings()
    if built is None:
        pytest.skip(f"llama.cpp's Python bindings are not importable ({installed_error}); install "
                    f"llama-cpp-python=={VERSION} or build them with scripts/llama_cpp.sh")
    sys.path.insert(0, str(built))
    try:
        return importlib.import_module("llama_cpp.llama_cpp")
    except (ImportError, OSError) as error:
        pytest.skip(f"llama.cpp's bindings built in {built} do not load: {error}")
