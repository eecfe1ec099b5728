"""Every template, stylesheet, script and licence the console serves ships in the wheel (package data)."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

import engram.console

ROOT = Path(engram.console.__file__).parent
PYPROJECT = ROOT.parents[1] / "pyproject.toml"


def shipped(path: str, pattern: str) -> bool:
    """setuptools' glob semantics: `*` never crosses a `/`."""
    parts, wanted = path.split("/"), pattern.split("/")
    return len(parts) == len(wanted) and all(fnmatch(p, w) for p, w in zip(parts, wanted, strict=True))


def test_package_data_covers_every_console_asset():
    patterns = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]["package-data"]["engram.console"]
    assets = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*")
              if p.is_file() and p.suffix != ".py" and "__pycache__" not in p.parts]  # fmt: skip
    assert any(a.startswith("templates/") for a in assets) and "static/vendor/cytoscape/LICENSE" in assets
    assert [a for a in assets if not any(shipped(a, pattern) for pattern in patterns)] == []
