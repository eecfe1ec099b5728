"""The layers say what they are (docs/architecture.md, "Layers").

Nothing below the API imports the XRPC runtime or the API handlers: store, search, auth, services and the CLI
raise `engram.errors` domain errors and build no wire shapes; only `engram/xrpc` and `engram/api` (and each
REST shim) turn them into answers. Beyond that, every package under engram/ has a place (`PLACES`) and the
architecture's rules hold between the places (`RULES`): the doors never import each other, the cluster never
imports a door, mechanisms never import a service or the configuration, services speak no HTTP. What still
breaks a rule is named, file by file, in `KNOWN_EXCEPTIONS` (issue 28)."""

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


# Every package and top-level module under engram/, by its place in the house (docs/architecture.md, "Layers").
# A new one must be placed here, so the rules below reach it.
PLACES = {
    "doors": ("api", "compat", "mcp", "console"),
    "runtime": ("xrpc", "cluster", "serving", "app_keys.py", "space_scopes.py"),
    "composition root": ("app.py", "lifecycle.py", "context.py", "config.py", "__main__.py", "__init__.py"),
    "service": ("service", "evaluation"),
    # engram as the space host of its hosted spaces: a service that speaks HTTP to syncers (sync/ is its twin)
    "space host": ("spacehost",),
    "mechanisms": (
        "store",
        "search",
        "embed",
        "auth",
        "atrepo",
        "oauth",
        "sync",
        "workers.py",
        "cpu_quota.py",
        "affinity.py",
        "outbound.py",
    ),
    "shared vocabulary": (
        "errors.py",
        "identifiers.py",
        "views.py",
        "config_values.py",
        "config_fields.py",
        "config_sections.py",
        "config_variables.py",
        "config_service_variables.py",
        "config_search_variables.py",
        "metrics.py",
        "logs.py",
    ),
    "console script": ("cli",),
    "package data": ("lexicons",),
}
DOORS = tuple(f"engram.{d}" for d in PLACES["doors"])
MECHANISMS = PLACES["mechanisms"]
ROOT = ("engram.app", "engram.lifecycle", "engram.context")
HTTP = ("aiohttp", "multidict", "yarl")

# (rule, the packages it binds, the modules they never import). Only rules that hold; what breaks one today is
# listed in KNOWN_EXCEPTIONS with the part of issue 28 that removes it.
RULES = [
    (
        "the doors never import each other",
        PLACES["doors"],
        DOORS,
    ),
    ("the cluster never imports a door", ("cluster",), DOORS),
    (
        "below the API nothing imports the XRPC runtime: the other doors, services, mechanisms, the CLI",
        (
            *PLACES["doors"][1:],
            *PLACES["service"],
            *PLACES["space host"],
            *MECHANISMS,
            *PLACES["shared vocabulary"],
            "cli",
        ),
        ("engram.xrpc", "engram.api"),
    ),
    (
        "the cluster is a stage in front of the doors: no door, service or mechanism imports it",
        (
            *PLACES["doors"],
            *PLACES["service"],
            *PLACES["space host"],
            *MECHANISMS,
            *PLACES["shared vocabulary"],
        ),
        ("engram.cluster",),
    ),
    (
        "services, the space host and mechanisms never import a door, the cluster, the serving layer or the CLI",
        (*PLACES["service"], *PLACES["space host"], *MECHANISMS),
        (*DOORS, "engram.cluster", "engram.serving", "engram.cli", "engram.app_keys"),
    ),
    (
        "mechanisms never import a service, the composition root or the configuration: they take values",
        MECHANISMS,
        ("engram.service", "engram.evaluation", "engram.spacehost", *ROOT, "engram.config"),
    ),
    ("services speak no HTTP", ("service",), HTTP),
    (
        "the store, search, embedders and repo format speak no HTTP",
        ("store", "search", "embed", "atrepo"),
        HTTP,
    ),
    (
        "errors and identifiers are the bottom: they import nothing of engram",
        ("errors.py", "identifiers.py"),
        ("engram",),
    ),
    (
        "only the CLI, the serving layer and the evaluation harness build an app or open a context",
        tuple(
            p
            for ps in PLACES.values()
            for p in ps
            if p not in ("cli", "serving", "evaluation", "app.py", "lifecycle.py")
        ),
        ("engram.app", "engram.lifecycle"),
    ),
    (
        "only `python -m engram` imports the CLI",
        tuple(p for ps in PLACES.values() for p in ps if p not in ("cli", "__main__.py")),
        ("engram.cli",),
    ),
]
# file -> the modules it may still import against a rule, and why it does. Shrinks, never grows.
KNOWN_EXCEPTIONS: dict[str, tuple[str, ...]] = {}


def _matches(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def breaches(places: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    found = []
    for place in places:
        where = PACKAGE / place
        own = "engram." + place.removesuffix(".py")
        for path in sorted(where.rglob("*.py") if where.is_dir() else [where]):
            name = str(path.relative_to(PACKAGE.parent))
            for line, module in imported_modules(path):
                if module == "engram.__version__":
                    continue  # the version string, not a module
                allowed = (own, *KNOWN_EXCEPTIONS.get(name, ()))
                if _matches(module, forbidden) and not _matches(module, allowed):
                    found.append(f"{name}:{line} imports {module}")
    return found


def test_every_package_under_engram_has_a_place():
    placed = [p for ps in PLACES.values() for p in ps]
    assert len(placed) == len(set(placed))
    present = {
        p.name for p in PACKAGE.iterdir() if p.suffix == ".py" or (p.is_dir() and p.name != "__pycache__")
    }
    assert sorted(present) == sorted(placed)


@pytest.mark.parametrize(("rule", "places", "forbidden"), RULES, ids=[r[0] for r in RULES])
def test_the_architecture_rules_hold(rule, places, forbidden):
    assert breaches(places, forbidden) == [], rule


def test_each_known_exception_still_exists():
    """An exception that no longer breaks a rule leaves the list."""
    for name, allowed in KNOWN_EXCEPTIONS.items():
        imported = [module for _, module in imported_modules(PACKAGE.parent / name)]
        assert all(any(_matches(m, (a,)) for m in imported) for a in allowed), name


def test_the_rule_checker_sees_a_door_importing_a_door(tmp_path, monkeypatch):
    door = tmp_path / "engram" / "console"
    door.mkdir(parents=True)
    (door / "page.py").write_text(
        "from ..compat.keys import bearer_token\nfrom . import state\nimport aiohttp\n"
    )
    monkeypatch.setattr(__import__(__name__, fromlist=["PACKAGE"]), "PACKAGE", tmp_path / "engram")
    assert breaches(("console",), DOORS) == [
        "engram/console/page.py:1 imports engram.compat.keys.bearer_token",
        "engram/console/page.py:1 imports engram.compat.keys",
    ]
    assert breaches(("console",), HTTP) == ["engram/console/page.py:3 imports aiohttp"]
