"""Compile lexicon field schemas into plain checking functions.

A check takes a decoded JSON value and raises ``ValidationError`` or returns None. Compiling once per
schema (per method, per referenced definition) keeps the per-request cost to a few dict lookups and
type tests: searchMemories validates every request and every response. Paths are only built when a
check fails (containers prepend their segment as the error passes up), never on the happy path.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from engram.xrpc.formats import FORMATS, check_cid
from engram.xrpc.lexicons import LexiconError, LexiconRegistry, full_ref, split_ref
from engram.xrpc.text_length import grapheme_count, utf8_len

Check = Callable[[Any], None]


class ValidationError(Exception):
    """A value does not match its lexicon schema; ``path`` says where (e.g. ``output.memories[3].cid``)."""

    def __init__(self, path: str, message: str):
        super().__init__(path, message)
        self.path = path
        self.message = message

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def compile_field(schema: dict[str, Any], registry: LexiconRegistry, nsid: str) -> Check:
    """A check for ``schema``; refs inside it resolve relative to ``nsid``."""
    kind = schema.get("type")
    compiler = _COMPILERS.get(kind)  # type: ignore[arg-type]
    if compiler is None:
        raise LexiconError(f"{nsid}: cannot validate values of type {kind!r}")
    return compiler(schema, registry, nsid)


def compile_ref(ref: str, registry: LexiconRegistry, nsid: str) -> Check:
    key = full_ref(ref, nsid)
    cached = registry.compiled_defs.get(key)
    if cached is not None:
        return cached
    late: list[Check] = []
    # A placeholder first, so recursive definitions (a ref back to an enclosing def) compile.
    registry.compiled_defs[key] = lambda v: late[0](v)
    target = registry.resolve_ref(ref, nsid)
    target_nsid = split_ref(ref, nsid)[0]
    if target.get("type") == "token":
        check = _token_check(key)
    elif target.get("type") == "record":
        check = compile_field(target["record"], registry, target_nsid)
    else:
        check = compile_field(target, registry, target_nsid)
    late.append(check)
    registry.compiled_defs[key] = check
    return check


def _fail(message: str) -> ValidationError:
    return ValidationError("", message)


def _at(err: ValidationError, segment: str) -> ValidationError:
    err.path = segment + (err.path if not err.path or err.path[0] == "[" else "." + err.path)
    return err


def _null(schema, registry, nsid) -> Check:
    def check(v: Any) -> None:
        if v is not None:
            raise _fail("must be null")

    return check


def _boolean(schema, registry, nsid) -> Check:
    const = schema.get("const")

    def check(v: Any) -> None:
        if type(v) is not bool:
            raise _fail("must be a boolean")
        if const is not None and v != const:
            raise _fail(f"must be {str(const).lower()}")

    return check


def _integer(schema, registry, nsid) -> Check:
    lo, hi, const = schema.get("minimum"), schema.get("maximum"), schema.get("const")
    enum = frozenset(schema["enum"]) if "enum" in schema else None

    def check(v: Any) -> None:
        if type(v) is not int:
            raise _fail("must be an integer")
        if lo is not None and v < lo:
            raise _fail(f"must be at least {lo}")
        if hi is not None and v > hi:
            raise _fail(f"must be at most {hi}")
        if const is not None and v != const:
            raise _fail(f"must be {const}")
        if enum is not None and v not in enum:
            raise _fail(f"must be one of {sorted(enum)}")

    return check


def _string(schema, registry, nsid) -> Check:
    min_len, max_len = schema.get("minLength"), schema.get("maxLength")
    min_g, max_g = schema.get("minGraphemes"), schema.get("maxGraphemes")
    const = schema.get("const")
    enum = frozenset(schema["enum"]) if "enum" in schema else None  # knownValues are advisory: not checked
    fmt = FORMATS[schema["format"]] if "format" in schema else None

    def check(v: Any) -> None:
        if type(v) is not str:
            raise _fail("must be a string")
        if const is not None and v != const:
            raise _fail(f"must be {const!r}")
        if enum is not None and v not in enum:
            raise _fail(f"must be one of {', '.join(sorted(enum))}")
        # UTF-8 never takes fewer bytes than code points nor more than 4 per code point: decide
        # cheaply when possible, count only in between.
        if max_len is not None and 4 * len(v) > max_len and (len(v) > max_len or _bytes(v) > max_len):
            raise _fail(f"must be at most {max_len} bytes (UTF-8)")
        if min_len is not None and len(v) < min_len and _bytes(v) < min_len:
            raise _fail(f"must be at least {min_len} bytes (UTF-8)")
        if max_g is not None and len(v) > max_g and grapheme_count(v) > max_g:
            raise _fail(f"must be at most {max_g} graphemes")
        if min_g is not None and (len(v) < min_g or grapheme_count(v) < min_g):
            raise _fail(f"must be at least {min_g} graphemes")
        if fmt is not None:
            problem = fmt(v)
            if problem is not None:
                raise _fail(problem)

    return check


def _bytes(v: str) -> int:
    try:
        return utf8_len(v)
    except ValueError as e:
        raise _fail(str(e)) from None


def _bytes_field(schema, registry, nsid) -> Check:
    min_len, max_len = schema.get("minLength"), schema.get("maxLength")

    def check(v: Any) -> None:
        n = len(decode_bytes(v))
        if max_len is not None and n > max_len:
            raise _fail(f"must be at most {max_len} bytes")
        if min_len is not None and n < min_len:
            raise _fail(f"must be at least {min_len} bytes")

    return check


def decode_bytes(v: Any) -> bytes:
    """The bytes of a JSON ``{"$bytes": base64}`` value (standard alphabet, padding optional)."""
    if type(v) is not dict or len(v) != 1 or type(v.get("$bytes")) is not str:
        raise _fail('must be bytes ({"$bytes": base64})')
    text = v["$bytes"]
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise _fail("must be standard base64 in $bytes") from None


def _cid_link(schema, registry, nsid) -> Check:
    def check(v: Any) -> None:
        if type(v) is not dict or len(v) != 1 or type(v.get("$link")) is not str or check_cid(v["$link"]):
            raise _fail('must be a CID link ({"$link": cid})')

    return check


def _blob(schema, registry, nsid) -> Check:
    accept, max_size = schema.get("accept"), schema.get("maxSize")
    link = _cid_link(schema, registry, nsid)

    def check(v: Any) -> None:
        if type(v) is not dict or v.get("$type") != "blob":
            raise _fail('must be a blob ({"$type": "blob", "ref", "mimeType", "size"})')
        link(v.get("ref"))
        mime, size = v.get("mimeType"), v.get("size")
        if type(mime) is not str or type(size) is not int or size < 0:
            raise _fail("must be a blob with a string mimeType and a non-negative integer size")
        if max_size is not None and size > max_size:
            raise _fail(f"must be a blob of at most {max_size} bytes")
        if accept is not None and not any(_mime_matches(pattern, mime) for pattern in accept):
            raise _fail(f"must be a blob of type {', '.join(accept)}")

    return check


def _mime_matches(pattern: str, mime: str) -> bool:
    if pattern == "*/*" or pattern == mime:
        return True
    return pattern.endswith("/*") and mime.startswith(pattern[:-1])


def _unknown(schema, registry, nsid) -> Check:
    def check(v: Any) -> None:
        if type(v) is not dict or "$bytes" in v or "$link" in v or v.get("$type") == "blob":
            raise _fail("must be an object")

    return check


def _token_check(token: str) -> Check:
    def check(v: Any) -> None:
        if v != token:
            raise _fail(f"must be the token {token}")

    return check


def _array(schema, registry, nsid) -> Check:
    item = compile_field(schema["items"], registry, nsid)
    min_len, max_len = schema.get("minLength"), schema.get("maxLength")

    def check(v: Any) -> None:
        if type(v) is not list:
            raise _fail("must be an array")
        if max_len is not None and len(v) > max_len:
            raise _fail(f"must have at most {max_len} items")
        if min_len is not None and len(v) < min_len:
            raise _fail(f"must have at least {min_len} items")
        for i, x in enumerate(v):
            try:
                item(x)
            except ValidationError as e:
                raise _at(e, f"[{i}]") from None

    return check


def _object(schema, registry, nsid) -> Check:
    props = {name: compile_field(prop, registry, nsid) for name, prop in schema.get("properties", {}).items()}
    required = tuple(schema.get("required", ()))
    nullable = frozenset(schema.get("nullable", ()))

    def check(v: Any) -> None:
        if type(v) is not dict:
            raise _fail("must be an object")
        for name in required:
            if name not in v:
                raise _at(_fail("is required"), name)
        for name, value in v.items():
            prop = props.get(name)  # undeclared properties are allowed (lexicons evolve by adding)
            if prop is None or (value is None and name in nullable):
                continue
            try:
                prop(value)
            except ValidationError as e:
                raise _at(e, name) from None

    return check


def _ref(schema, registry, nsid) -> Check:
    key = full_ref(schema["ref"], nsid)
    # Resolved on first use, so a definition can refer to itself.
    return lambda v: (registry.compiled_defs.get(key) or compile_ref(schema["ref"], registry, nsid))(v)


def _union(schema, registry, nsid) -> Check:
    refs = {full_ref(r, nsid): r for r in schema["refs"]}
    closed = bool(schema.get("closed", False))

    def check(v: Any) -> None:
        if type(v) is not dict or type(v.get("$type")) is not str:
            raise _fail("must be an object with a $type")
        t = v["$type"]
        t = t[:-5] if t.endswith("#main") else t
        ref = refs.get(t)
        if ref is None:
            if closed:
                raise _fail(f"must be one of {', '.join(sorted(refs))}")
            return  # open union: a type we don't know is passed through
        compile_ref(ref, registry, nsid)(v)

    return check


_COMPILERS: dict[str, Callable[[dict, LexiconRegistry, str], Check]] = {
    "null": _null,
    "boolean": _boolean,
    "integer": _integer,
    "string": _string,
    "bytes": _bytes_field,
    "cid-link": _cid_link,
    "blob": _blob,
    "unknown": _unknown,
    "array": _array,
    "object": _object,
    "ref": _ref,
    "union": _union,
}
