"""No import cycle among engram's modules (issue 28, §7).

The graph is built from the source with `ast`, not by importing: an edge is a module-level import, so an import
inside a function (a deliberate late import) or under `if TYPE_CHECKING:` (types only) is no edge. Importing
`a.b.c` also imports the packages `a` and `a.b`, so those are edges too, except a module's own enclosing packages,
which Python has already started importing by the time the module runs; `from . import name` still counts
as an edge to the enclosing package when `name` is defined there rather than being a submodule."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import engram

PACKAGE = Path(engram.__file__).parent

# Cycles known today, to shrink and never to grow: each is the set of modules of one knot. Empty: the
# app.py <-> lifecycle.py circle went with LEXICON_DIR moving to engram/xrpc/lexicons.py. The ring of type-only
# imports through engram/context.py (services typed against AppContext, issue 28 §1) is not counted here;
# it goes when services stop taking the context.
KNOWN_CYCLES: list[frozenset[str]] = []


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def module_level_imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports that run when the module is imported: not inside a def, not under `if TYPE_CHECKING:`."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from module_level_imports(node.body)
            yield from module_level_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                yield from module_level_imports(block)
        elif isinstance(node, ast.With):
            yield from module_level_imports(node.body)


def _enclosing(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the engram modules its module-level imports run."""
    paths = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}

    def known(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        own = set(_enclosing(module))
        targets: set[str] = set()
        for node in module_level_imports(ast.parse(path.read_text(), str(path)).body):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if found := known(alias.name):
                        targets.update((found, *_enclosing(found)))
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            found = known(source)
            if found is None:
                continue
            targets.update((found, *_enclosing(found)))
            for alias in node.names:
                if f"{found}.{alias.name}" in paths:
                    targets.add(f"{found}.{alias.name}")
                elif found in own:
                    targets.add(f"{found}#defined")  # a name taken from the partly imported package itself
        graph[module] = {
            t.removesuffix("#defined") for t in targets if t.endswith("#defined") or t not in own
        } - {module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan), each a cycle or a knot of them."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def describe(component: frozenset[str], graph: dict[str, set[str]]) -> str:
    return "; ".join(f"{m} -> {', '.join(sorted(graph[m] & component))}" for m in sorted(component))


def test_engram_has_no_import_cycle_beyond_the_known_ones():
    graph = import_graph()
    assert len(graph) > 200  # the walk saw the package
    new = [describe(c, graph) for c in cycles(graph) if c not in KNOWN_CYCLES]
    assert new == [], "new import cycle(s): " + " | ".join(new)


def test_the_known_cycles_still_exist():
    """The allow-list only shrinks: a cycle that is gone leaves it."""
    assert [c for c in KNOWN_CYCLES if c not in cycles(import_graph())] == []


def test_the_checker_finds_cycles_and_ignores_late_and_type_only_imports(tmp_path):
    root = tmp_path / "engram"
    (root / "pkg").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "a.py").write_text("from .b import f\n")
    (root / "b.py").write_text("import engram.c\n")
    (root / "c.py").write_text("from engram import a\n")  # a -> b -> c -> a
    (root / "d.py").write_text("def f():\n    from . import e\n")  # late: no edge
    (root / "e.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import d\nimport os\n"
    )
    (root / "pkg" / "__init__.py").write_text("from .x import X\nNAME = 1\n")
    (root / "pkg" / "x.py").write_text("from . import y\nX = 1\n")  # a submodule: no edge to pkg
    (root / "pkg" / "y.py").write_text("from . import NAME\n")  # a name of the package itself: an edge
    graph = import_graph(root)
    assert graph["engram.d"] == set() and graph["engram.e"] == set()
    assert graph["engram.pkg.x"] == {"engram.pkg.y"}
    assert sorted(map(sorted, cycles(graph))) == [
        ["engram.a", "engram.b", "engram.c"],
        ["engram.pkg", "engram.pkg.x", "engram.pkg.y"],
    ]
