"""Tests import what they share from tests/support/, never from another test module or a conftest: a test
module is a list of tests, and with several conftest.py files on the path `from conftest import X` finds
whichever was imported first."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def imported_test_modules(path: Path) -> list[str]:
    """The test modules (`test_*`, `conftest`) that the file at `path` imports, by module name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        found += [n for n in names if _is_test_module(n.split(".")[-1], path)]
    return found


def _is_test_module(name: str, importer: Path) -> bool:
    """A test module or conftest of this suite (or, for the check's own test, beside `importer`), not a
    library's `test_utils`."""
    if not (name.startswith("test_") or name == "conftest"):
        return False
    return any(TESTS.rglob(f"{name}.py")) or (importer.parent / f"{name}.py").exists() or name == "conftest"


def test_no_test_module_imports_another_test_module():
    offenders = {
        str(path.relative_to(TESTS)): imported_test_modules(path)
        for path in sorted(TESTS.rglob("*.py"))
        if "node_modules" not in path.parts and imported_test_modules(path)
    }
    assert offenders == {}


def test_the_check_sees_both_import_forms(tmp_path):
    bad = tmp_path / "test_bad.py"
    (tmp_path / "test_other.py").write_text("")
    bad.write_text(
        "from conftest import MODEL\nimport test_other\nfrom support.search_fakes import seeded\n"
        "from aiohttp.test_utils import TestClient\n"
    )
    assert imported_test_modules(bad) == ["conftest", "test_other"]
