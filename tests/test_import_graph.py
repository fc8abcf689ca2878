"""The import graph of `textreact/` has no cycle, even at run time (DESIGN.md: imports run down
only). Every import counts, wherever it is written: at module level, inside a function, under
`TYPE_CHECKING`, relative or absolute; importing a name from a package is an edge to the
package (its `__init__` runs and may import its submodules), importing a submodule an edge to
that module. The source is parsed, not imported, so an import that only runs on some path is
found too."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "textreact"


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package at `root` by its dotted name (a package by its own)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(name: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The modules of `known` that module `name` (at `path`) imports, anywhere in its code."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    top = min(known, key=len)  # the package itself
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:  # a submodule, else a name the module (or package) holds
                full = f"{base}.{alias.name}"
                targets.add(full if full in known else base)
    owners = {_owner(target, known) for target in targets if target.partition(".")[0] == top}
    return owners - {name, None}


def _owner(target: str, known: Mapping[str, Path]) -> str | None:
    """The module that `target` (a module, or a name inside one) lives in."""
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target or None


def import_graph(root: Path) -> dict[str, list[str]]:
    """Each module of the package at `root`, with the modules of the package it imports."""
    known = modules(root)
    return {name: sorted(imported(name, path, known)) for name, path in known.items()}


def cycles(root: Path) -> list[list[str]]:
    """One cycle of each strongly connected group of modules, as the path that closes it."""
    graph = import_graph(root)
    return [_closed_path(group, graph) for group in _groups(graph) if len(group) > 1]


def _groups(graph: Mapping[str, list[str]]) -> list[set[str]]:
    """The strongly connected components of `graph` (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for after in graph[node]:
            if after not in index:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in on_stack:
                low[node] = min(low[node], index[after])
        if low[node] == index[node]:
            group, member = set(), None
            while member != node:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
            found.append(group)

    for node in graph:
        if node not in index:
            visit(node)
    return found


def _closed_path(group: set[str], graph: Mapping[str, list[str]]) -> list[str]:
    """The shortest path within `group` from its first module back to itself."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for after in graph[node]:
                if after == start:
                    return [*paths[node], start]
                if after in group and after not in paths:
                    paths[after] = [*paths[node], after]
                    following.append(after)
        frontier = following
    raise AssertionError(f"no cycle through {start} in {sorted(group)}")  # a group has one


def test_textreact_imports_run_down_only() -> None:
    """Each cycle is named by the path that closes it, and by every module caught in it."""
    graph = import_graph(PACKAGE)
    found = [group for group in _groups(graph) if len(group) > 1]
    shown = "\n".join(
        f"{' -> '.join(_closed_path(group, graph))} (caught in it: {', '.join(sorted(group))})"
        for group in found
    )
    assert not found, f"import cycles in textreact/ (break each one):\n{shown}"


def test_each_name_a_module_loads_lazily_is_also_an_import_the_check_sees() -> None:
    """`importlib.import_module(name)` with a computed name (a package's lazy `__getattr__`) is
    an edge the parse cannot follow: a module that loads names so also imports each of them
    in a statement (under `TYPE_CHECKING`, say), which the graph counts."""
    unseen = {}
    for name, path in modules(PACKAGE).items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nodes = list(ast.walk(tree))
        if not any(
            isinstance(node, ast.Call) and _called(node) == "import_module" for node in nodes
        ):
            continue
        bound = {
            alias.asname or alias.name
            for node in nodes
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        defined = {getattr(node, "name", None) for node in tree.body}
        assigned = {
            target.id
            for node in tree.body
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        public = next(
            (
                ast.literal_eval(node.value)
                for node in tree.body
                if isinstance(node, ast.Assign)
                and any(getattr(target, "id", None) == "__all__" for target in node.targets)
            ),
            [],
        )
        missing = sorted(set(public) - bound - defined - assigned)
        if missing:
            unseen[name] = missing
    assert not unseen, f"names loaded by import_module that no import statement names: {unseen}"


def _called(call: ast.Call) -> str | None:
    """The name a call calls: `f` of `f(...)` and of `module.f(...)`."""
    function = call.func
    return function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)


def test_the_check_sees_imports_in_functions_relative_ones_and_package_reexports(
    tmp_path: Path,
) -> None:
    """A cycle through an import inside a function, one through a relative import, and one
    through a package `__init__` that re-exports a submodule which imports the package."""
    files = {
        "pkg/__init__.py": "from pkg.sub.types import Shared\n",
        "pkg/a.py": "def late():\n    from pkg import b\n",
        "pkg/b.py": "import pkg.a\n",
        "pkg/c.py": "from .d import thing\n",
        "pkg/d.py": "from . import c\nthing = 1\n",
        "pkg/sub/__init__.py": "from pkg.sub.types import Shared\n",
        "pkg/sub/types.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from pkg.sub import other\n",
        "pkg/sub/other.py": "from pkg.sub import Shared\n",
        "pkg/fine.py": "import json\nfrom pkg.a import late\nfrom pkg import c\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = {tuple(cycle) for cycle in cycles(tmp_path / "pkg")}
    assert found == {
        ("pkg.a", "pkg.b", "pkg.a"),
        ("pkg.c", "pkg.d", "pkg.c"),
        ("pkg.sub", "pkg.sub.types", "pkg.sub.other", "pkg.sub"),
    }
