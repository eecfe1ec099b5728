"""Structural check of lexicon documents: the lexicon language's own schema, as data.

The atproto SDK's pydantic models (``atproto_lexicon.models``) cover most of the language but not the
``null`` field type or the spaces ``space`` definition type, and they cost a pydantic import at
start-up; this small table-driven check covers the whole language we use, with errors that name the
JSON path. The tests parse every shipped lexicon with the SDK models too, where the SDK knows the type.
"""

from __future__ import annotations

import re
from typing import Any

from engram.identifiers import RECORD_KEY_RE
from engram.xrpc.formats import FORMATS, check_nsid

_COMMON = {"type", "description"}
_RECORD_KEY_TYPE_RE = re.compile(rf"tid|nsid|any|literal:{RECORD_KEY_RE.pattern}")
# Allowed keys per field type (besides type/description); values are checked below by key name.
_FIELD_KEYS: dict[str, set[str]] = {
    "null": set(),
    "boolean": {"default", "const"},
    "integer": {"default", "const", "minimum", "maximum", "enum"},
    "string": {
        "format",
        "default",
        "const",
        "minLength",
        "maxLength",
        "minGraphemes",
        "maxGraphemes",
        "enum",
        "knownValues",
    },
    "bytes": {"minLength", "maxLength"},
    "cid-link": set(),
    "blob": {"accept", "maxSize"},
    "array": {"items", "minLength", "maxLength"},
    "object": {"properties", "required", "nullable"},
    "ref": {"ref"},
    "union": {"refs", "closed"},
    "unknown": set(),
    "token": set(),
}
_PARAM_TYPES = {"boolean", "integer", "string", "unknown"}
_INT_KEYS = {"minimum", "maximum", "minLength", "maxLength", "minGraphemes", "maxGraphemes", "maxSize"}
_METHOD_KEYS = {
    "query": {"parameters", "output", "errors"},
    "procedure": {"parameters", "input", "output", "errors"},
    "subscription": {"parameters", "message", "errors", "infos"},
}


class LexiconStructureError(ValueError):
    pass


def check_document(doc: Any) -> None:
    """Raise LexiconStructureError (message starts with the JSON path) if ``doc`` isn't a lexicon."""
    if not isinstance(doc, dict):
        _fail("$", "a lexicon document must be a JSON object")
    if doc.get("lexicon") != 1:
        _fail("lexicon", "must be 1")
    if not isinstance(doc.get("id"), str) or check_nsid(doc["id"]) is not None:
        _fail("id", "must be an NSID")
    _only(doc, {"lexicon", "id", "defs", "description", "revision", "$type"}, "$")
    defs = doc.get("defs")
    if not isinstance(defs, dict) or not defs:
        _fail("defs", "must be a non-empty object")
    for name, d in defs.items():
        path = f"defs.{name}"
        if not isinstance(d, dict):
            _fail(path, "must be an object")
        kind = d.get("type")
        if name != "main" and kind in ("record", "query", "procedure", "subscription", "space"):
            _fail(path, f"a {kind} definition must be named main")
        _check_def(d, path)


def _check_def(d: dict[str, Any], path: str) -> None:
    kind = d.get("type")
    if kind == "record":
        _only(d, _COMMON | {"key", "record"}, path)
        if not isinstance(d.get("key", "any"), str) or not _RECORD_KEY_TYPE_RE.fullmatch(d.get("key", "any")):
            _fail(f"{path}.key", "must be tid, nsid, any or literal:<value>")
        _check_field(d.get("record"), f"{path}.record", only={"object"})
    elif kind in _METHOD_KEYS:
        _only(d, _COMMON | _METHOD_KEYS[kind], path)
        if "parameters" in d:
            _check_params(d["parameters"], f"{path}.parameters")
        for body in ("input", "output", "message"):
            if body in d:
                _check_body(d[body], f"{path}.{body}", need_encoding=body != "message")
        for key in ("errors", "infos"):
            for i, err in enumerate(d.get(key, [])):
                if not isinstance(err, dict) or not isinstance(err.get("name"), str):
                    _fail(f"{path}.{key}[{i}]", "must be an object with a name")
                _only(err, {"name", "description"}, f"{path}.{key}[{i}]")
    elif kind == "space":
        # Spaces (permissioned data) space-type definition: only these keys exist.
        _only(d, _COMMON | {"name", "key", "collections"}, path)
        cols = d.get("collections", [])
        if not isinstance(cols, list) or any(not isinstance(c, str) or check_nsid(c) for c in cols):
            _fail(f"{path}.collections", "must be an array of NSIDs")
    elif kind == "params":
        _check_params(d, path)
    else:
        _check_field(d, path)


def _check_params(p: Any, path: str) -> None:
    if not isinstance(p, dict) or p.get("type") != "params":
        _fail(path, "must be a params definition")
    _check_field({**p, "type": "object"}, path)  # params are shaped like an object without nullable
    if "nullable" in p:
        _fail(path, "unexpected key(s): nullable")
    for name, prop in p["properties"].items():
        item = prop.get("items", {}) if prop.get("type") == "array" else prop
        if item.get("type") not in _PARAM_TYPES:
            _fail(
                f"{path}.properties.{name}",
                "parameters may only be boolean, integer, string, unknown or arrays",
            )


def _check_body(b: Any, path: str, need_encoding: bool) -> None:
    if not isinstance(b, dict):
        _fail(path, "must be an object")
    _only(b, {"description", "encoding", "schema"}, path)
    if need_encoding and not isinstance(b.get("encoding"), str):
        _fail(f"{path}.encoding", "must be a string")
    if "schema" in b:
        _check_field(b["schema"], f"{path}.schema", only={"object", "ref", "union"})


def _check_field(f: Any, path: str, only: set[str] | None = None) -> None:
    if not isinstance(f, dict) or f.get("type") not in _FIELD_KEYS:
        _fail(
            path,
            f"must be a definition with a known type, not {f.get('type') if isinstance(f, dict) else f!r}",
        )
    kind = f["type"]
    if only is not None and kind not in only:
        _fail(path, f"must be of type {' or '.join(sorted(only))}")
    _only(f, _COMMON | _FIELD_KEYS[kind], path)
    for key in _INT_KEYS & f.keys():
        if type(f[key]) is not int or f[key] < 0 and key not in ("minimum", "maximum"):
            _fail(f"{path}.{key}", "must be an integer")
    if kind == "string" and "format" in f and f["format"] not in FORMATS:
        _fail(f"{path}.format", f"unknown string format {f['format']!r}")
    for key in ("enum", "knownValues", "required", "nullable", "refs", "accept"):
        if key in f and not (isinstance(f[key], list) and all(isinstance(v, (str, int)) for v in f[key])):
            _fail(f"{path}.{key}", "must be an array")
    if kind == "ref" and not isinstance(f.get("ref"), str):
        _fail(f"{path}.ref", "must be a string")
    if kind == "array":
        _check_field(f.get("items"), f"{path}.items")
    if kind == "object":
        props = f.get("properties")
        if not isinstance(props, dict):
            _fail(f"{path}.properties", "must be an object")
        for name, prop in props.items():
            _check_field(prop, f"{path}.properties.{name}")
        for key in ("required", "nullable"):
            missing = set(f.get(key, [])) - props.keys()
            if missing:
                _fail(f"{path}.{key}", f"names undeclared properties: {', '.join(sorted(missing))}")


def _only(d: dict[str, Any], allowed: set[str], path: str) -> None:
    extra = d.keys() - allowed
    if extra:
        _fail(path, f"unexpected key(s): {', '.join(sorted(extra))}")


def _fail(path: str, message: str) -> None:
    raise LexiconStructureError(f"{path}: {message}")
