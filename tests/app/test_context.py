"""The object graph is built whole (issue 28 §1): `AppContext` has no field that is None while starting up,
only the real options below, and no service (nor the space host, issue 28 §5) reaches for the whole
context."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import engram
from engram.context import AppContext

PACKAGE = Path(engram.__file__).parent

# The parts that may really be absent, and when.
REAL_OPTIONS = {
    "embedder": "ENGRAM_EMBEDDER=none, or `engram mcp` before its model is loaded",
    "metrics": "the server's; the CLI's local commands have none",
    "notifier": "notifyWrite to registered syncers: the server only",
    "syncer": "synced spaces: the server only",
    "cluster": "cluster mode only",
}


def _optional(annotation: str) -> bool:
    return "None" in annotation.replace(" ", "").split("|") or annotation.startswith("Optional[")


def test_only_the_real_options_of_the_context_may_be_none():
    # The annotations are strings (PEP 563): read them as written.
    optional = {f.name for f in fields(AppContext) if _optional(str(f.type))}
    assert optional == set(REAL_OPTIONS)


def test_the_checker_sees_optional_annotations():
    assert _optional("Store | None") and _optional("None | Store") and _optional("Optional[Store]")
    assert not _optional("Store") and not _optional("Callable[[], float]")


def _imports(path: Path) -> set[str]:
    package = ".".join(("engram", *path.relative_to(PACKAGE).with_suffix("").parts[:-1]))
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):  # TYPE_CHECKING imports included
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_no_service_imports_the_context():
    """Services and the space host get their collaborators when they are built or called; none takes the
    whole context (not even for a type: TYPE_CHECKING imports count)."""
    offenders = {
        str(path.relative_to(PACKAGE.parent))
        for package in ("service", "spacehost")
        for path in (PACKAGE / package).rglob("*.py")
        if "engram.context" in _imports(path)
    }
    assert offenders == set()


def test_the_context_checker_sees_a_relative_import(tmp_path, monkeypatch):
    module = tmp_path / "engram" / "spacehost" / "example.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..context import AppContext\n"
    )
    monkeypatch.setattr(f"{__name__}.PACKAGE", tmp_path / "engram")
    assert "engram.context" in _imports(module)


async def test_the_app_factory_opens_every_part_before_the_doors(aiohttp_client, settings):
    """`await create_app(...)` hands back an app whose context is whole before anything serves, and its parts
    close with the app."""
    from engram.app import create_app
    from engram.app_keys import context_key

    app = await create_app(settings)
    ctx = app[context_key]
    missing = [
        f.name for f in fields(AppContext) if f.name not in REAL_OPTIONS and getattr(ctx, f.name) is None
    ]
    assert missing == []
    assert ctx.syncer is not None and ctx.notifier is not None and ctx.metrics is not None  # the server's
    assert ctx.ready is False
    client = await aiohttp_client(app)
    assert ctx.ready is True
    assert (await client.get("/xrpc/_health")).status == 200
    await client.close()
    assert ctx.ready is False and ctx.http.closed
