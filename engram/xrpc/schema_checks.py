"""Compile lexicon field schemas into plain checking functions.

A check takes a decoded JSON value and raises ``ValidationError`` or returns None. Compiling once per
schema (per method, per referenced definition) keeps the per-request cost to a few dict lookups and
type tests: searchMemories validates every request and every response. Paths are only built when a
check fails (containers prepend their segment as the error passes up), never on the happy path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engram.xrpc import scalar_checks as scalar
from engram.xrpc.lexicons import LexiconError, LexiconRegistry, full_ref, split_ref
from engram.xrpc.scalar_checks import Check, ValidationError, decode_bytes, fail

__all__ = ["Check", "ValidationError", "compile_field", "compile_ref", "decode_bytes"]


def compile_field(schema: dict[str, Any], registry: LexiconRegistry, nsid: str) -> Check:
    """A check for ``schema``; refs inside it resolve relative to ``nsid``."""
    kind = schema.get("type")
    compiler = _COMPILERS.get(kind)  # type: ignore[arg-type]
    if compiler is None:
        raise LexiconError(f"{nsid}: cannot validate values of type {kind!r}")
    return compiler(schema, registry, nsid)


def compile_ref(ref: str, registry: LexiconRegistry, nsid: str) -> Check:
    key = full_ref(ref, nsid)
    cached: Check | None = registry.compiled_defs.get(key)
    if cached is not None:
        return cached
    late: list[Check] = []
    # A placeholder first, so recursive definitions (a ref back to an enclosing def) compile: the
    # inner ref gets the placeholder, which forwards to the finished check.
    registry.compiled_defs[key] = lambda v: late[0](v)
    try:
        target = registry.resolve_ref(ref, nsid)
        target_nsid = split_ref(ref, nsid)[0]
        if target.get("type") == "token":
            check = _token_check(key)
        elif target.get("type") == "record":
            check = compile_field(target["record"], registry, target_nsid)
        else:
            check = compile_field(target, registry, target_nsid)
    except LexiconError:
        del registry.compiled_defs[key]
        raise
    late.append(check)
    registry.compiled_defs[key] = check
    return check


def _at(err: ValidationError, segment: str) -> ValidationError:
    err.path = segment + (err.path if not err.path or err.path[0] == "[" else "." + err.path)
    return err


def _token_check(token: str) -> Check:
    def check(v: Any) -> None:
        if v != token:
            raise fail(f"must be the token {token}")

    return check


def _array(schema: dict[str, Any], registry: LexiconRegistry, nsid: str) -> Check:
    item = compile_field(schema["items"], registry, nsid)
    min_len, max_len = schema.get("minLength"), schema.get("maxLength")

    def check(v: Any) -> None:
        if type(v) is not list:
            raise fail("must be an array")
        if max_len is not None and len(v) > max_len:
            raise fail(f"must have at most {max_len} items")
        if min_len is not None and len(v) < min_len:
            raise fail(f"must have at least {min_len} items")
        for i, x in enumerate(v):
            try:
                item(x)
            except ValidationError as e:
                raise _at(e, f"[{i}]") from None

    return check


def _object(schema: dict[str, Any], registry: LexiconRegistry, nsid: str) -> Check:
    props = {name: compile_field(prop, registry, nsid) for name, prop in schema.get("properties", {}).items()}
    required = tuple(schema.get("required", ()))
    nullable = frozenset(schema.get("nullable", ()))

    def check(v: Any) -> None:
        if type(v) is not dict:
            raise fail("must be an object")
        for name in required:
            if name not in v:
                raise _at(fail("is required"), name)
        for name, value in v.items():
            prop = props.get(name)  # undeclared properties are allowed (lexicons evolve by adding)
            if prop is None or (value is None and name in nullable):
                continue
            try:
                prop(value)
            except ValidationError as e:
                raise _at(e, name) from None

    return check


def _ref(schema: dict[str, Any], registry: LexiconRegistry, nsid: str) -> Check:
    return compile_ref(schema["ref"], registry, nsid)


def _union(schema: dict[str, Any], registry: LexiconRegistry, nsid: str) -> Check:
    variants = {full_ref(r, nsid): compile_ref(r, registry, nsid) for r in schema["refs"]}
    closed = bool(schema.get("closed", False))

    def check(v: Any) -> None:
        if type(v) is not dict or type(v.get("$type")) is not str:
            raise fail("must be an object with a $type")
        t = v["$type"]
        t = t.removesuffix("#main")
        variant = variants.get(t)
        if variant is None:
            if closed:
                raise fail(f"must be one of {', '.join(sorted(variants))}")
            return  # open union: a type we don't know is passed through
        variant(v)

    return check


_COMPILERS: dict[str, Callable[[dict[str, Any], LexiconRegistry, str], Check]] = {
    "null": lambda schema, registry, nsid: scalar.null_check(schema),
    "boolean": lambda schema, registry, nsid: scalar.boolean_check(schema),
    "integer": lambda schema, registry, nsid: scalar.integer_check(schema),
    "string": lambda schema, registry, nsid: scalar.string_check(schema),
    "bytes": lambda schema, registry, nsid: scalar.bytes_check(schema),
    "cid-link": lambda schema, registry, nsid: scalar.cid_link_check(schema),
    "blob": lambda schema, registry, nsid: scalar.blob_check(schema),
    "unknown": lambda schema, registry, nsid: scalar.unknown_check(schema),
    "array": _array,
    "object": _object,
    "ref": _ref,
    "union": _union,
}
