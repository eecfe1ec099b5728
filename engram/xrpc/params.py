"""Decode and validate a method's query-string parameters against its lexicon ``params``.

atproto conventions: only declared parameters are read (others are ignored), array parameters are
repeated keys (``?tags=a&tags=b``), booleans are ``true``/``false``, defaults fill absent parameters.
Stricter than the reference TypeScript server in two ways, on purpose: integers must be plain decimal
(``parseInt`` would take ``10abc``), and a non-array parameter given twice is an error rather than
"first one wins", so a client bug can't silently change a query.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from multidict import MultiMapping

from engram.errors import InvalidInput
from engram.xrpc.lexicons import LexiconRegistry, MethodDef
from engram.xrpc.schema_checks import Check, ValidationError, compile_field

# Up to 2^53 in magnitude, like every atproto integer (JSON numbers are doubles in most clients).
_INT_RE = re.compile(r"-?[0-9]{1,16}")
_MAX_SAFE_INT = 2**53 - 1


class _Param(NamedTuple):
    name: str
    is_array: bool
    decode: Callable[[str], Any]
    check_item: Check
    check_whole: Check | None  # array length bounds, run on the decoded list
    default: Any
    has_default: bool


def decode_params(
    method: MethodDef, query: MultiMapping[str] | Mapping[str, str], registry: LexiconRegistry
) -> dict[str, Any]:
    """The declared parameters, typed and validated; absent optional ones without a default are omitted.

    Raises InvalidInput naming the parameter, e.g. ``Invalid parameter "limit": must be at most 50``.
    """
    params, required = method.compiled.get("params") or compile_params(method, registry)
    # A plain mapping (one value per key) is accepted too, for callers outside aiohttp.
    getall = getattr(query, "getall", None) or (lambda k, d: [query[k]] if k in query else d)
    out: dict[str, Any] = {}
    for p in params:
        raw = getall(p.name, ())
        if not raw:
            if p.has_default:
                out[p.name] = p.default
            elif p.name in required:
                raise InvalidInput(f'Missing required parameter "{p.name}"')
            continue
        if p.is_array:
            values = [_decode_one(p, f"{p.name}[{i}]", s) for i, s in enumerate(raw)]
            try:
                p.check_whole(values)  # type: ignore[misc]
            except ValidationError as e:
                raise InvalidInput(f'Invalid parameter "{p.name}": {e.message}') from None
            out[p.name] = values
        elif len(raw) > 1:
            raise InvalidInput(f'Invalid parameter "{p.name}": must be given at most once')
        else:
            out[p.name] = _decode_one(p, p.name, raw[0])
    return out


def _decode_one(p: _Param, label: str, raw: str) -> Any:
    try:
        value = p.decode(raw)
        p.check_item(value)
    except ValidationError as e:
        raise InvalidInput(f'Invalid parameter "{label}": {e.message}') from None
    return value


def compile_params(method: MethodDef, registry: LexiconRegistry) -> tuple[list[_Param], frozenset[str]]:
    """Build (once; cached on the method) the per-parameter decoders and checks."""
    if "params" in method.compiled:
        cached: tuple[list[_Param], frozenset[str]] = method.compiled["params"]
        return cached
    spec = method.parameters or {"properties": {}}
    params = []
    for name, schema in spec["properties"].items():
        is_array = schema["type"] == "array"
        item = schema["items"] if is_array else schema
        whole = None
        if is_array:
            bounds = {k: schema[k] for k in ("minLength", "maxLength") if k in schema}
            whole = _length_only(bounds)
        params.append(
            _Param(
                name=name,
                is_array=is_array,
                decode=_DECODERS[item["type"]],
                check_item=compile_field(item, registry, method.nsid) if item["type"] != "unknown" else _any,
                check_whole=whole,
                default=schema.get("default"),
                has_default="default" in schema,
            )
        )
    compiled = method.compiled["params"] = (params, frozenset(spec.get("required", ())))
    return compiled


def _length_only(bounds: dict[str, int]) -> Check:
    lo, hi = bounds.get("minLength"), bounds.get("maxLength")

    def check(values: list[Any]) -> None:
        if hi is not None and len(values) > hi:
            raise ValidationError("", f"must have at most {hi} items")
        if lo is not None and len(values) < lo:
            raise ValidationError("", f"must have at least {lo} items")

    return check


def _any(value: Any) -> None:
    return None


def _decode_integer(s: str) -> int:
    if not _INT_RE.fullmatch(s) or abs(n := int(s)) > _MAX_SAFE_INT:
        raise ValidationError("", "must be an integer")
    return n


def _decode_boolean(s: str) -> bool:
    if s == "true":
        return True
    if s == "false":
        return False
    raise ValidationError("", "must be true or false")


_DECODERS: dict[str, Callable[[str], Any]] = {
    "integer": _decode_integer,
    "boolean": _decode_boolean,
    "string": str,
    "unknown": str,
}
