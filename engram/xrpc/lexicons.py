"""The lexicon registry: every lexicon document the service knows, indexed by NSID.

Loaded once at start-up from the package's ``lexicons/`` (path mirrors the NSID), through
importlib.resources so an installed wheel finds them as well as a checkout. A bad file stops start-up with a
``LexiconError`` that names it: a service must never run with a lexicon it half understood.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal

from engram.xrpc.lexicon_schema import LexiconStructureError, check_document

# Package data: engram/lexicons is a symlink to the top-level lexicons/ in a checkout and a copy in a wheel.
# Here, beside the loader, so the server (engram/app.py) and the CLI (engram/lifecycle.py) share it without
# one importing the other (tests/app/test_import_cycles.py, docs/architecture.md#layers).
LEXICON_DIR = resources.files("engram") / "lexicons"

MethodKind = Literal["query", "procedure", "subscription"]


class LexiconError(Exception):
    """A lexicon file or document is unusable (bad JSON, bad structure, id/path mismatch, bad ref)."""


@dataclass(frozen=True, eq=False)
class MethodDef:
    nsid: str
    kind: MethodKind
    parameters: dict[str, Any] | None
    input: dict[str, Any] | None  # {"encoding": ..., "schema"?: ...}
    output: dict[str, Any] | None
    errors: frozenset[str]
    description: str | None
    # Per-method compiled validators, filled lazily by engram.xrpc.validate and engram.xrpc.params.
    compiled: dict[str, Any] = field(default_factory=dict, repr=False)


class LexiconRegistry:
    def __init__(self, docs: Mapping[str, dict[str, Any]]):
        self._docs = dict(docs)
        self._methods = {
            nsid: _method_def(nsid, doc["defs"]["main"])
            for nsid, doc in self._docs.items()
            if doc["defs"].get("main", {}).get("type") in ("query", "procedure", "subscription")
        }
        # Compiled validators for "nsid#name" definitions, shared by every schema that refers to them.
        self.compiled_defs: dict[str, Any] = {}

    @classmethod
    def load(cls, directory: Path | Traversable) -> LexiconRegistry:
        """Every *.json under `directory`: a filesystem path or a package resource (importlib.resources)."""
        docs = []
        for parts, path in sorted(_json_files(directory, ())):
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
                raise LexiconError(f"{path}: not a readable JSON file: {e}") from e
            docs.append((str(path), doc))
            expected = ".".join(parts)
            if isinstance(doc, dict) and doc.get("id") != expected:
                raise LexiconError(
                    f"{path}: id {doc.get('id')!r} does not match its path (expected {expected!r})"
                )
        return cls._build(docs)

    @classmethod
    def from_docs(cls, docs: Iterable[dict[str, Any]]) -> LexiconRegistry:
        return cls._build([(f"<lexicon {d.get('id') if isinstance(d, dict) else '?'}>", d) for d in docs])

    @classmethod
    def _build(cls, named_docs: list[tuple[str, Any]]) -> LexiconRegistry:
        by_id: dict[str, dict[str, Any]] = {}
        for name, doc in named_docs:
            try:
                check_document(doc)
            except LexiconStructureError as e:
                raise LexiconError(f"{name}: {e}") from e
            if doc["id"] in by_id:
                raise LexiconError(f"{name}: duplicate lexicon id {doc['id']!r}")
            by_id[doc["id"]] = doc
        registry = cls(by_id)
        for name, doc in named_docs:
            registry._check_refs(name, doc["id"], doc["defs"])
        return registry

    def get(self, nsid: str) -> dict[str, Any]:
        """The whole lexicon document for ``nsid``; KeyError if unknown."""
        return self._docs[nsid]

    def __contains__(self, nsid: object) -> bool:
        return nsid in self._docs

    def methods(self) -> dict[str, MethodDef]:
        """A copy of every method by NSID (for start-up work; per request use `find_method`)."""
        return dict(self._methods)

    def find_method(self, nsid: str) -> MethodDef | None:
        """The method `nsid`, or None: the per-request lookup (copying `methods()` cost ~3 % of a search)."""
        return self._methods.get(nsid)

    def method(self, nsid: str) -> MethodDef:
        return self._methods[nsid]

    def resolve_ref(self, ref: str, context_nsid: str) -> dict[str, Any]:
        """The definition a ref points at: "nsid#name", "#name" (in context_nsid) or "nsid" (its main)."""
        nsid, name = split_ref(ref, context_nsid)
        try:
            found: dict[str, Any] = self._docs[nsid]["defs"][name]
            return found
        except KeyError:
            raise LexiconError(f"unresolvable ref {ref!r} (from {context_nsid})") from None

    def _check_refs(self, name: str, nsid: str, node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "ref" and isinstance(node.get("ref"), str):
                self._resolve_or_fail(name, node["ref"], nsid)
            if node.get("type") == "union" and isinstance(node.get("refs"), list):
                for ref in node["refs"]:
                    self._resolve_or_fail(name, ref, nsid)
            for value in node.values():
                self._check_refs(name, nsid, value)
        elif isinstance(node, list):
            for value in node:
                self._check_refs(name, nsid, value)

    def _resolve_or_fail(self, name: str, ref: str, nsid: str) -> None:
        try:
            self.resolve_ref(ref, nsid)
        except LexiconError as e:
            raise LexiconError(f"{name}: {e}") from None


def split_ref(ref: str, context_nsid: str) -> tuple[str, str]:
    """("nsid", "name") for a ref; "#name" is local to context_nsid and a bare "nsid" means its main."""
    nsid, _, name = ref.partition("#")
    return (nsid or context_nsid, name or "main")


def full_ref(ref: str, context_nsid: str) -> str:
    """The canonical ``$type`` spelling of a ref: "nsid#name", or bare "nsid" for a main definition."""
    nsid, name = split_ref(ref, context_nsid)
    return nsid if name == "main" else f"{nsid}#{name}"


def _method_def(nsid: str, main: dict[str, Any]) -> MethodDef:
    return MethodDef(
        nsid=nsid,
        kind=main["type"],
        parameters=main.get("parameters"),
        input=main.get("input"),
        output=main.get("output"),
        errors=frozenset(e["name"] for e in main.get("errors", [])),
        description=main.get("description"),
    )


def _json_files(
    node: Path | Traversable, parts: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], Traversable]]:
    """(NSID parts, file) of every *.json below `node`. Written over Traversable rather than Path.rglob so
    the same walk reads a checkout's directory and an installed package's resources."""
    for child in node.iterdir():
        if child.is_dir():
            yield from _json_files(child, (*parts, child.name))
        elif child.name.endswith(".json"):
            yield (*parts, child.name.removesuffix(".json")), child
