"""Tests import what they share from tests/support/, never from another test module or a conftest: a test
module is a list of tests, and with several conftest.py files on the path `from conftest import X` finds
whichever was imported first."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_modules_of(path: Path) -> list[str]:
    """The test modules (`test_*`, `conftest`) that the file at `path` imports, by module name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        found += [n for n in names if n.split(".")[-1].startswith("test_") or n.split(".")[-1] == "conftest"]
    return found


def test_no_test_module_imports_another_test_module():
    offenders = {
        str(path.relative_to(TESTS)): test_modules_of(path)
        for path in sorted(TESTS.rglob("*.py"))
        if "node_modules" not in path.parts and test_modules_of(path)
    }
    assert offenders == {}


def test_the_check_sees_both_import_forms(tmp_path):
    bad = tmp_path / "test_bad.py"
    bad.write_text("from conftest import MODEL\nimport test_other\nfrom support.search_fakes import seeded\n")
    assert test_modules_of(bad) == ["conftest", "test_other"]
