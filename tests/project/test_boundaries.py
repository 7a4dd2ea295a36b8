"""One job per package: only gui/ imports Qt, only runtime/ (and models/ for validation) imports onnxruntime,
decoding/ is pure numpy (it imports no other package of this project and no Qt or onnxruntime, not even inside a
function; the front ends cli/ and gui/ bring the model), and nothing on the run-time path imports
torch/transformers/optimum at module level."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["gui", "cli", "runtime", "decoding", "runfiles", "models"]
HEAVY = {"torch", "transformers", "optimum", "gguf", "accelerate"}

ALLOWED = {
    "gui": {"PySide6", "pyqtgraph"},
    "cli": set(),
    "runtime": {"onnxruntime", "onnx"},
    "models": {"onnxruntime", "onnx"},
    "decoding": set(),
    "runfiles": set(),
}
RESTRICTED = {"PySide6", "pyqtgraph", "onnxruntime", "onnx"}
# What the pure core may never import, anywhere in a module (decoding.engine.protocol states what it needs instead).
NOT_IN_DECODING = RESTRICTED | {"runtime", "models", "gui", "cli", "bench", "main", "runfiles"}
# What opens, reads, writes or lists files and processes: none of it in decoding/ (runfiles/ does the files).
FILE_AND_PROCESS_IO = {"os", "shutil", "tempfile", "subprocess", "pathlib", "importlib", "io", "glob", "sqlite3"}
FILE_CALLS = {"open", "read_text", "write_text", "read_bytes", "write_bytes", "mkstemp", "unlink", "rename"}


def _top_level_imports(path: Path) -> set[str]:
    """Module names imported at module level (not inside functions)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _all_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_restricted_imports_stay_in_their_package():
    offenders = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            used = _all_imports(path) & RESTRICTED
            if used - ALLOWED[package]:
                offenders.append(f"{path.relative_to(ROOT)} imports {sorted(used - ALLOWED[package])}")
    assert not offenders, "\n".join(offenders)


def _hidden_imports(path: Path) -> list[int]:
    """Lines the import names above cannot see: importlib.import_module / __import__ calls, and relative imports
    reaching above the module's own package."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level > 1:
            lines.append(node.lineno)
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in ("import_module", "__import__"):
                lines.append(node.lineno)
    return lines


def test_decoding_imports_no_model_runtime_or_front_end():
    offenders = []
    paths = sorted((ROOT / "decoding").rglob("*.py"))
    assert len(paths) > 10  # the walk really finds the package
    for path in paths:
        used = _all_imports(path) & NOT_IN_DECODING
        if used:
            offenders.append(f"{path.relative_to(ROOT)} imports {sorted(used)}")
        offenders += [f"{path.relative_to(ROOT)}:{line} imports out of sight" for line in _hidden_imports(path)]
    assert not offenders, "\n".join(offenders)


def test_decoding_opens_no_file():
    offenders = []
    for path in sorted((ROOT / "decoding").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        used = _all_imports(path) & FILE_AND_PROCESS_IO
        if used - {"pathlib"}:
            offenders.append(f"{path.relative_to(ROOT)} imports {sorted(used)}")
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "pathlib":
                if {alias.name for alias in node.names} - {"PurePath", "PurePosixPath", "PureWindowsPath"}:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} imports a concrete pathlib Path")
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                if name in FILE_CALLS:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} calls {name}")
    assert not offenders, "\n".join(offenders)


def test_heavy_export_deps_are_never_imported_at_module_level():
    offenders = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            used = _top_level_imports(path) & HEAVY
            if used:
                offenders.append(f"{path.relative_to(ROOT)} imports {sorted(used)} at module level")
    assert not offenders, "\n".join(offenders)


def test_run_time_modules_do_not_pull_in_torch():
    code = (
        "import sys, runtime, decoding.engine.engine, gui.main_window, models.catalog, cli.run_command\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'optimum') if m in sys.modules)\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def _project_imports(path: Path) -> set[str]:
    """Dotted project modules a file imports (every import: module level, functions, TYPE_CHECKING)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


GUI_ROLES = ["state", "present", "views", "dialogs", "shell", "i18n"]


def test_gui_is_laid_out_by_role():
    """gui/'s top level keeps at most 8 modules; its code lives in the role subpackages."""
    top = sorted(p.name for p in (ROOT / "gui").glob("*.py"))
    assert len(top) <= 8, top
    assert all((ROOT / "gui" / role / "__init__.py").is_file() for role in GUI_ROLES)


def test_gui_state_and_presentation_are_qt_free():
    offenders = []
    for role in ("state", "present"):
        paths = sorted((ROOT / "gui" / role).rglob("*.py"))
        assert len(paths) > 3
        for path in paths:
            used = _all_imports(path) & {"PySide6", "pyqtgraph"}
            if used:
                offenders.append(f"{path.relative_to(ROOT)} imports {sorted(used)}")
    # the translation helper the Qt-free modules use is Qt-free too
    assert not _all_imports(ROOT / "gui" / "i18n" / "__init__.py") & {"PySide6", "pyqtgraph"}
    assert not offenders, "\n".join(offenders)


def test_gui_layers_import_downwards_only():
    """views/ know neither the shell nor the window; state/ and present/ know no view, dialog or shell; dialogs
    know no shell except its worker thread."""
    forbidden = {
        "views": ("gui.shell", "gui.main_window", "gui.app"),
        "state": ("gui.views", "gui.dialogs", "gui.shell", "gui.main_window", "gui.app"),
        "present": ("gui.state.controller", "gui.views", "gui.dialogs", "gui.shell", "gui.main_window", "gui.app"),
        "dialogs": ("gui.main_window", "gui.app"),
        "shell": ("gui.main_window", "gui.app"),
    }
    offenders = []
    for role, prefixes in forbidden.items():
        for path in sorted((ROOT / "gui" / role).rglob("*.py")):
            bad = sorted(name for name in _project_imports(path) if name.startswith(prefixes))
            if bad:
                offenders.append(f"{path.relative_to(ROOT)} imports {bad}")
    assert not offenders, "\n".join(offenders)
