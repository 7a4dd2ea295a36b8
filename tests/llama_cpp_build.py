"""llama.cpp as scripts/llama_cpp.sh builds it (cached under ~/.cache/branchpoint/llama.cpp/VERSION/): the server
binary for the served-lane tests and the sdist's `llama_cpp` package over the same shared libraries for oracle
tests. Neither builds anything: a machine without the build skips (the reason says how to build it)."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

VERSION = "0.3.36"
BUILD_HINT = "run scripts/llama_cpp.sh (test.sh does)"


def build_dir() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "branchpoint" / "llama.cpp" / VERSION


def built() -> bool:
    return (build_dir() / ".built").is_file()


def server_binary() -> Path | None:
    """bin/llama-server of a finished build, or None."""
    binary = build_dir() / "bin" / "llama-server"
    return binary if built() and binary.is_file() else None


def import_llama_cpp() -> ModuleType:
    """The sdist's `llama_cpp` package, loading the build's libllama (its lib/ folder, named by LLAMA_CPP_LIB_PATH:
    the package looks there first), or pytest.skip with the reason."""
    if not built():
        pytest.skip(f"llama.cpp {VERSION} is not built in {build_dir()}: {BUILD_HINT}")
    package_parent = build_dir() / "python"
    loaded = sys.modules.get("llama_cpp")
    if loaded is not None:
        if Path(loaded.__file__).resolve().parent.parent != package_parent.resolve():
            pytest.skip(f"another llama_cpp is imported already ({loaded.__file__})")
        return loaded
    os.environ["LLAMA_CPP_LIB_PATH"] = str(package_parent / "llama_cpp" / "lib")
    sys.path.insert(0, str(package_parent))
    try:
        return importlib.import_module("llama_cpp")
    except ImportError as exc:  # e.g. its own dependencies (diskcache) missing
        pytest.skip(f"llama_cpp from {package_parent} does not import: {exc}")
    except OSError as exc:  # the shared library does not load
        pytest.skip(f"llama_cpp's library in {package_parent} does not load: {exc}")
    finally:
        sys.path.remove(str(package_parent))
