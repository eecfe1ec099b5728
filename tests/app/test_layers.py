"""The layers say what they are: nothing below the API imports the XRPC runtime or the API handlers.

Store, search, auth, services and the CLI raise `engram.errors` domain errors and build no wire shapes;
only `engram/xrpc` and `engram/api` (and each REST shim) turn them into answers (docs/architecture.md,
"Layers")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import engram

PACKAGE = Path(engram.__file__).parent
BELOW_THE_API = ("store", "search", "auth", "service", "cli", "embed")
SHARED_VOCABULARY = ("errors.py", "identifiers.py", "views.py")
FORBIDDEN = ("engram.xrpc", "engram.api")


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in a module, relative imports resolved."""
    package = ".".join(("engram", *path.relative_to(PACKAGE).with_suffix("").parts[:-1]))
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            # `from engram import xrpc` imports the package engram.xrpc
            out.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names)
            out.append((node.lineno, module))
    return out


def crossings(layer: str) -> list[str]:
    found = []
    where = PACKAGE / layer
    for path in sorted(where.rglob("*.py") if where.is_dir() else [where]):
        for line, module in imported_modules(path):
            if any(module == f or module.startswith(f + ".") for f in FORBIDDEN):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}")
    return found


@pytest.mark.parametrize("layer", BELOW_THE_API + SHARED_VOCABULARY)
def test_layer_imports_neither_the_xrpc_runtime_nor_the_api(layer):
    assert (PACKAGE / layer).exists()
    assert crossings(layer) == []


def test_the_checker_sees_relative_and_absolute_crossings(tmp_path, monkeypatch):
    layer = tmp_path / "engram" / "service"
    layer.mkdir(parents=True)
    (layer / "bad.py").write_text(
        "from ..xrpc.errors import InvalidRequestError\nimport engram.api.views\nfrom engram import xrpc\n"
        "from ..errors import InvalidInput\n"
    )
    monkeypatch.setattr(__import__(__name__, fromlist=["PACKAGE"]), "PACKAGE", tmp_path / "engram")
    assert [c.split(" imports ")[1] for c in crossings("service")] == [
        "engram.xrpc.errors.InvalidRequestError",
        "engram.xrpc.errors",
        "engram.api.views",
        "engram.xrpc",
    ]
