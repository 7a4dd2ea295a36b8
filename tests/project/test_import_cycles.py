"""No import cycles anywhere in the project, counting every import: module level, under `TYPE_CHECKING` and
inside functions. A cycle hidden in a function or a type-checking block still ties its modules together (neither
can be read, moved or tested without the other), so the graph is built from every `import` statement in a file.

One case per top-level package (the cycles among its own modules) and one for cycles that cross packages."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["cli", "decoding", "runtime", "models", "bench", "gui"]
TOP_MODULES = ["main"]

Graph = dict[str, set[str]]


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules(root: Path, packages: Iterable[str], top_modules: Iterable[str] = ()) -> dict[str, Path]:
    """Every module of the given packages (subpackages included) and top-level modules, by dotted name."""
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            modules[_module_name(path, root)] = path
    for name in top_modules:
        modules[name] = root / f"{name}.py"
    return modules


def _resolve_base(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The absolute module a `from … import` reads from (relative levels resolved against the importer)."""
    if node.level == 0:
        return node.module or ""
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    anchor = package[: len(package) - (node.level - 1)]
    return ".".join(anchor + ([node.module] if node.module else []))


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of a dotted name that is a project module (`import a.b.c` of a function path)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def _imported(node: ast.AST, importer: str, is_package: bool, modules: dict[str, Path]) -> set[str]:
    if isinstance(node, ast.Import):
        targets = [_known(alias.name, modules) for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = _resolve_base(node, importer, is_package)
        # `from pkg import sub` imports the submodule when there is one, else a name of pkg itself.
        targets = [_known(f"{base}.{alias.name}", modules) or _known(base, modules) for alias in node.names]
    else:
        return set()
    return {target for target in targets if target and target != importer}


def import_graph(modules: dict[str, Path]) -> Graph:
    """Module → the project modules it imports, from every import statement in its file."""
    graph: Graph = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        graph[name] = set()
        for node in ast.walk(tree):
            graph[name] |= _imported(node, name, is_package, modules)
    return graph


def strongly_connected(graph: Graph) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module (each one holds a cycle)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def one_cycle(graph: Graph, component: list[str]) -> list[str]:
    """A shortest cycle through the component's first module, as the path of imports that closes it."""
    start = component[0]
    members = set(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node] & members):
                if target == start:
                    return paths[node] + [start]
                if target not in paths:
                    paths[target] = paths[node] + [target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"no cycle through {start} in {component}")


def cycle_report(graph: Graph, components: list[list[str]]) -> str:
    return "\n".join(
        f"{len(component)} modules import each other, e.g. {' -> '.join(one_cycle(graph, component))}"
        for component in components
    )


def _top(module: str) -> str:
    return module.split(".")[0]


def _within(graph: Graph, package: str) -> Graph:
    return {
        name: {target for target in targets if _top(target) == package}
        for name, targets in graph.items()
        if _top(name) == package
    }


@pytest.fixture(scope="module")
def project_graph() -> Graph:
    modules = project_modules(ROOT, PACKAGES, TOP_MODULES)
    assert len(modules) > 100 and "decoding.records.trace" in modules  # the walk really finds the project
    return import_graph(modules)


@pytest.mark.parametrize(
    "package", PACKAGES + TOP_MODULES
)
def test_no_import_cycle_inside_a_package(project_graph, package):
    graph = _within(project_graph, package)
    assert graph, f"no modules found for {package}"
    components = strongly_connected(graph)
    assert not components, f"import cycles in {package}:\n{cycle_report(graph, components)}"


def test_no_import_cycle_across_packages(project_graph):
    crossing = [c for c in strongly_connected(project_graph) if len({_top(m) for m in c}) > 1]
    assert not crossing, f"import cycles across packages:\n{cycle_report(project_graph, crossing)}"


def test_every_kind_of_import_closes_a_cycle(tmp_path):
    """The checker sees cycles closed by a function-local import, a `TYPE_CHECKING` import and a relative one."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n")
    (package / "b.py").write_text("def f():\n    from . import c\n")
    (package / "c.py").write_text("import pkg.a.something\n")
    (package / "d.py").write_text("from pkg import a\n")
    graph = import_graph(project_modules(tmp_path, ["pkg"]))
    assert graph["pkg.d"] == {"pkg.a"}
    assert strongly_connected(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
    assert one_cycle(graph, ["pkg.a", "pkg.b", "pkg.c"]) == ["pkg.a", "pkg.b", "pkg.c", "pkg.a"]
