"""One job per package: only gui/ imports Qt, only runtime/ (and models/ for validation) imports onnxruntime,
decoding/ is pure numpy (it imports no other package of this project and no Qt or onnxruntime, not even inside a
function; the front ends cli/ and gui/ bring the model), nothing on the run-time path imports
torch/transformers/optimum at module level, and gui/'s layers import downwards only, counting what a module
reaches through the modules it imports."""

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


GUI_LAYERS = {  # what a role's modules may not reach, directly or through any module they import
    "views": ("gui.shell", "gui.main_window", "gui.app"),
    "state": ("gui.present", "gui.views", "gui.dialogs", "gui.shell", "gui.main_window", "gui.app"),
    "present": ("gui.state.controller", "gui.views", "gui.dialogs", "gui.shell", "gui.main_window", "gui.app"),
    "dialogs": ("gui.shell", "gui.main_window", "gui.app"),
    "shell": ("gui.main_window", "gui.app"),
}


def reached(graph: dict[str, set[str]], start: str) -> dict[str, str]:
    """Every project module `start` imports, directly or through others: module -> the module importing it on a
    shortest path from `start`."""
    via: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for name in frontier:
            for imported in sorted(graph.get(name, ())):
                if imported != start and imported not in via:
                    via[imported] = name
                    following.append(imported)
        frontier = following
    return via


def _chain(via: dict[str, str], start: str, end: str) -> str:
    names = [end]
    while names[-1] != start:
        names.append(via[names[-1]])
    return " -> ".join(reversed(names))


def layer_offenders(root: Path, layers: dict[str, tuple[str, ...]]) -> list[str]:
    """The imports that break gui/'s layers, each with its path of imports (every import counts: module level,
    inside functions, TYPE_CHECKING; a rule holds for what a module reaches through other project modules)."""
    from tests.project.test_import_cycles import import_graph, project_modules

    modules = project_modules(root, PACKAGES, ["main"])
    graph = import_graph(modules)
    offenders = []
    for role, prefixes in layers.items():
        for name in sorted(n for n in modules if n.startswith(f"gui.{role}.") or n == f"gui.{role}"):
            via = reached(graph, name)
            offenders += [f"{name} reaches {target}: {_chain(via, name, target)}"
                          for target in sorted(via) if target.startswith(prefixes)]
    return offenders


def test_gui_layers_import_downwards_only():
    """views/ reach neither the shell nor the window, not even through a dialog; state/ reaches no presentation,
    view, dialog or shell; present/ no controller, view, dialog or shell; dialogs no shell; nothing the window
    or the app. Counted over every import a module makes and every module those import in turn."""
    offenders = layer_offenders(ROOT, GUI_LAYERS)
    assert not offenders, "\n".join(offenders)


def test_the_layer_check_follows_imports_through_other_modules(tmp_path):
    """A view that imports a dialog that imports the shell inside a function breaks the views' rule (the
    dialog's own import is what breaks it: the view names no shell module)."""
    files = {
        "gui/__init__.py": "",
        "gui/views/__init__.py": "",
        "gui/views/picker.py": "from gui.dialogs.setup import SetupDialog\n",
        "gui/dialogs/__init__.py": "",
        "gui/dialogs/setup.py": "def SetupDialog():\n    from gui.shell.worker import Worker\n    return Worker\n",
        "gui/shell/__init__.py": "",
        "gui/shell/worker.py": "Worker = object\n",
        "main.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    for package in PACKAGES:
        (tmp_path / package).mkdir(exist_ok=True)
    offenders = layer_offenders(tmp_path, {"views": ("gui.shell",)})
    assert offenders == ["gui.views.picker reaches gui.shell.worker: gui.views.picker -> gui.dialogs.setup -> "
                         "gui.shell.worker"]
