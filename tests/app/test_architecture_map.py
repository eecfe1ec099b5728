"""docs/architecture.md maps the whole house: every package and top-level module under engram/ is named in its
components table, so a new one is documented where the layers are (docs/architecture.md#components)."""

from __future__ import annotations

import re
from pathlib import Path

import engram

PACKAGE = Path(engram.__file__).parent
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"


def parts_under_engram() -> list[str]:
    """`engram/<name>/` for every subpackage (and the lexicons' data directory), `engram/<name>.py` for every
    top-level module, and `engram/<package>/<name>/` for the subpackages one level down."""
    out = []
    for path in sorted(PACKAGE.iterdir()):
        if path.suffix == ".py":
            out.append(f"engram/{path.name}")
        elif path.is_dir() and path.name != "__pycache__":
            out.append(f"engram/{path.name}/" if path.name != "lexicons" else "engram/lexicons")
            out += [
                f"engram/{path.name}/{sub.name}/"
                for sub in sorted(path.iterdir())
                if (sub / "__init__.py").is_file() and sub.name != "migrations"
            ]
    return out


def named_in(text: str, part: str) -> bool:
    """`engram/compat/` or `engram/app.py` named as such, or a subpackage named inside its package's row
    (`sim/` in the `engram/compat/` row)."""
    if f"`{part}`" in text:
        return True
    parent, _, name = part.rstrip("/").rpartition("/")
    rows = [line for line in text.splitlines() if f"`{parent}/`" in line]
    return parent != "engram" and any(re.search(rf"`{re.escape(name)}/`", row) for row in rows)


def test_every_package_and_module_under_engram_is_named_in_the_architecture():
    text = ARCHITECTURE.read_text()
    parts = parts_under_engram()
    assert "engram/store/postgres/" in parts and "engram/errors.py" in parts  # the walk sees both kinds
    assert [part for part in parts if not named_in(text, part)] == []


def test_a_part_missing_from_the_map_is_reported():
    text = "| `engram/compat/` | the shims: `sim/` |\n| `engram/app.py` | the root |"
    assert named_in(text, "engram/compat/") and named_in(text, "engram/compat/sim/")
    assert named_in(text, "engram/app.py")
    assert not named_in(text, "engram/compat/gptbots/") and not named_in(text, "engram/views.py")
