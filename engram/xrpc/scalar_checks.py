"""Checks for lexicon leaf values: null, boolean, integer, string, bytes, cid-link, blob, unknown.

Each ``*_check(schema)`` returns a function that raises ``ValidationError`` for a bad value. The
containers (arrays, objects, refs, unions) that compose them live in engram.xrpc.schema_checks.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from engram.xrpc.formats import FORMATS, check_cid
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


def fail(message: str) -> ValidationError:
    return ValidationError("", message)


def null_check(schema: dict[str, Any]) -> Check:
    def check(v: Any) -> None:
        if v is not None:
            raise fail("must be null")

    return check


def boolean_check(schema: dict[str, Any]) -> Check:
    const = schema.get("const")

    def check(v: Any) -> None:
        if type(v) is not bool:
            raise fail("must be a boolean")
        if const is not None and v != const:
            raise fail(f"must be {str(const).lower()}")

    return check


def integer_check(schema: dict[str, Any]) -> Check:
    lo, hi, const = schema.get("minimum"), schema.get("maximum"), schema.get("const")
    enum = frozenset(schema["enum"]) if "enum" in schema else None

    def check(v: Any) -> None:
        if type(v) is not int:
            raise fail("must be an integer")
        if lo is not None and v < lo:
            raise fail(f"must be at least {lo}")
        if hi is not None and v > hi:
            raise fail(f"must be at most {hi}")
        if const is not None and v != const:
            raise fail(f"must be {const}")
        if enum is not None and v not in enum:
            raise fail(f"must be one of {sorted(enum)}")

    return check


def string_check(schema: dict[str, Any]) -> Check:
    min_len, max_len = schema.get("minLength"), schema.get("maxLength")
    min_g, max_g = schema.get("minGraphemes"), schema.get("maxGraphemes")
    const = schema.get("const")
    enum = frozenset(schema["enum"]) if "enum" in schema else None  # knownValues are advisory: not checked
    fmt = FORMATS[schema["format"]] if "format" in schema else None
    if not (schema.keys() & _STRING_BOUNDS):
        return _plain_string(fmt)

    def check(v: Any) -> None:
        if type(v) is not str:
            raise fail("must be a string")
        if const is not None and v != const:
            raise fail(f"must be {const!r}")
        if enum is not None and v not in enum:
            raise fail(f"must be one of {', '.join(sorted(enum))}")
        # UTF-8 never takes fewer bytes than code points nor more than 4 per code point: decide
        # cheaply when possible, count only in between.
        if max_len is not None and 4 * len(v) > max_len and (len(v) > max_len or _bytes(v) > max_len):
            raise fail(f"must be at most {max_len} bytes (UTF-8)")
        if min_len is not None and len(v) < min_len and _bytes(v) < min_len:
            raise fail(f"must be at least {min_len} bytes (UTF-8)")
        if max_g is not None and len(v) > max_g and grapheme_count(v) > max_g:
            raise fail(f"must be at most {max_g} graphemes")
        if min_g is not None and (len(v) < min_g or grapheme_count(v) < min_g):
            raise fail(f"must be at least {min_g} graphemes")
        if fmt is not None:
            problem = fmt(v)
            if problem is not None:
                raise fail(problem)

    return check


_STRING_BOUNDS = {"minLength", "maxLength", "minGraphemes", "maxGraphemes", "const", "enum"}


def _plain_string(fmt: Callable[[str], str | None] | None) -> Check:
    """The common case (no bounds, maybe a format), without the unused branches: it runs per field."""
    if fmt is None:

        def check(v: Any) -> None:
            if type(v) is not str:
                raise fail("must be a string")

        return check

    def check_format(v: Any) -> None:
        if type(v) is not str:
            raise fail("must be a string")
        problem = fmt(v)
        if problem is not None:
            raise fail(problem)

    return check_format


def _bytes(v: str) -> int:
    try:
        return utf8_len(v)
    except ValueError as e:
        raise fail(str(e)) from None


def bytes_check(schema: dict[str, Any]) -> Check:
    min_len, max_len = schema.get("minLength"), schema.get("maxLength")

    def check(v: Any) -> None:
        n = len(decode_bytes(v))
        if max_len is not None and n > max_len:
            raise fail(f"must be at most {max_len} bytes")
        if min_len is not None and n < min_len:
            raise fail(f"must be at least {min_len} bytes")

    return check


def decode_bytes(v: Any) -> bytes:
    """The bytes of a JSON ``{"$bytes": base64}`` value (standard alphabet, padding optional)."""
    if type(v) is not dict or len(v) != 1 or type(v.get("$bytes")) is not str:
        raise fail('must be bytes ({"$bytes": base64})')
    text = v["$bytes"]
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise fail("must be standard base64 in $bytes") from None


def cid_link_check(schema: dict[str, Any]) -> Check:
    def check(v: Any) -> None:
        if type(v) is not dict or len(v) != 1 or type(v.get("$link")) is not str or check_cid(v["$link"]):
            raise fail('must be a CID link ({"$link": cid})')

    return check


def blob_check(schema: dict[str, Any]) -> Check:
    accept, max_size = schema.get("accept"), schema.get("maxSize")
    link = cid_link_check(schema)

    def check(v: Any) -> None:
        if type(v) is not dict or v.get("$type") != "blob":
            raise fail('must be a blob ({"$type": "blob", "ref", "mimeType", "size"})')
        link(v.get("ref"))
        mime, size = v.get("mimeType"), v.get("size")
        if type(mime) is not str or type(size) is not int or size < 0:
            raise fail("must be a blob with a string mimeType and a non-negative integer size")
        if max_size is not None and size > max_size:
            raise fail(f"must be a blob of at most {max_size} bytes")
        if accept is not None and not any(_mime_matches(pattern, mime) for pattern in accept):
            raise fail(f"must be a blob of type {', '.join(accept)}")

    return check


def _mime_matches(pattern: str, mime: str) -> bool:
    if pattern == "*/*" or pattern == mime:
        return True
    return pattern.endswith("/*") and mime.startswith(pattern[:-1])


def unknown_check(schema: dict[str, Any]) -> Check:
    def check(v: Any) -> None:
        if type(v) is not dict or "$bytes" in v or "$link" in v or v.get("$type") == "blob":
            raise fail("must be an object")

    return check
