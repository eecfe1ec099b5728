"""Validate request bodies, response bodies and arbitrary values against the lexicons.

The pipeline (engram.xrpc.server) calls, per request: ``decode_params`` (re-exported from
engram.xrpc.params), ``validate_input`` and, on the handler's result, ``validate_output``. A bad
request is the client's fault (InvalidInput, 400); a bad output is ours (ValidationError, which
the pipeline logs and turns into a 500).
"""

from __future__ import annotations

from typing import Any

import orjson

from engram.errors import InvalidInput
from engram.xrpc.lexicons import LexiconRegistry, MethodDef
from engram.xrpc.params import compile_params, decode_params
from engram.xrpc.schema_checks import Check, ValidationError, compile_field, decode_bytes

__all__ = [
    "ValidationError",
    "decode_bytes",
    "decode_params",
    "precompile",
    "validate_input",
    "validate_output",
    "validate_value",
]

_JSON = "application/json"


def precompile(registry: LexiconRegistry) -> None:
    """Compile every method's params, input and output checks now (start-up), not on first request.

    Also surfaces schema problems the structural check can't see (such as a ref to a definition of a
    type values can't have) as a LexiconError at start-up.
    """
    for method in registry.methods().values():
        compile_params(method, registry)
        _compiled(method, "input", registry)
        _compiled(method, "output", registry)


def validate_value(
    schema: dict[str, Any], value: Any, registry: LexiconRegistry, context_nsid: str, path: str
) -> None:
    """Raise ValidationError (path starting with ``path``) unless ``value`` matches ``schema``."""
    _run(compile_field(schema, registry, context_nsid), value, path)


NOT_PARSED: Any = object()  # `parsed` default: the body has not been decoded yet


def validate_input(
    method: MethodDef,
    content_type: str | None,
    body: bytes,
    registry: LexiconRegistry,
    *,
    parsed: Any = NOT_PARSED,
) -> Any:
    """The request body, checked against the method's declared input.

    No declared input: the body must be empty (as the atproto servers answer) and None is returned.
    JSON input: the Content-Type must be application/json; the parsed, validated value is returned
    (``$bytes``/``$link`` objects stay as they are: see ``decode_bytes``). Any other encoding (such as
    ``*/*``): the Content-Type must match it and the raw bytes are returned. ``parsed``: the body already
    decoded as JSON by the caller (the runtime peeks at it for auth), so it is not decoded twice.
    """
    spec = method.input
    if spec is None:
        if body:
            raise InvalidInput("A request body was provided when none was expected")
        return None
    if not body:
        raise InvalidInput("A request body is expected but none was provided")
    encoding = spec["encoding"]
    mime = (content_type or "").split(";", 1)[0].strip().lower()
    if not _encoding_matches(encoding, mime):
        raise InvalidInput(
            f"Wrong request encoding (Content-Type): expected {encoding}, got {mime or 'none'}"
        )
    if encoding != _JSON:
        return body
    if parsed is not NOT_PARSED:
        value = parsed
    else:
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise InvalidInput("Request body is not valid JSON") from None
    check = _compiled(method, "input", registry)
    if check is not None:
        try:
            check(value)
        except ValidationError as e:
            raise InvalidInput(f"Invalid input: {_with_root(e, 'input')}") from None
    return value


def validate_output(method: MethodDef, body: Any, registry: LexiconRegistry) -> None:
    """Raise ValidationError unless ``body`` is what the method's lexicon says it returns.

    Only JSON outputs are checked against a schema; a method without an output must return None.
    """
    spec = method.output
    if spec is None:
        if body is not None:
            raise ValidationError("output", "the method declares no output")
        return
    if spec.get("encoding") != _JSON:
        return
    check = _compiled(method, "output", registry)
    if check is not None:
        _run(check, body, "output")


def _compiled(method: MethodDef, which: str, registry: LexiconRegistry) -> Check | None:
    cache = method.compiled
    if which not in cache:
        spec = method.input if which == "input" else method.output
        schema = (spec or {}).get("schema")
        cache[which] = compile_field(schema, registry, method.nsid) if schema is not None else None
    check: Check | None = cache[which]
    return check


def _run(check: Check, value: Any, root: str) -> None:
    try:
        check(value)
    except ValidationError as e:
        _with_root(e, root)
        raise


def _with_root(e: ValidationError, root: str) -> ValidationError:
    if root:
        e.path = root + ("" if not e.path else e.path if e.path[0] == "[" else "." + e.path)
    return e


def _encoding_matches(encoding: str, mime: str) -> bool:
    if encoding == "*/*":
        return True
    if encoding.endswith("/*"):
        return mime.startswith(encoding[:-1])
    return mime == encoding
