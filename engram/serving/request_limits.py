"""How long a request line (and a header field) may be, derived from the lexicons.

aiohttp's default 8,190-byte request line rejects a query vector over about 2,970 dimensions, while the
searchMemories lexicon allows a 43,000-character vector. The limit here is the longest line any query
method's parameters allow: every parameter at its maximum, every byte percent-encoded (a client may
encode even base64url characters). Parameters without a `maxLength` get the bound of their string format,
or `UNBOUNDED_STRING_BYTES`. A lexicon that raises a maximum therefore raises this limit with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..xrpc.lexicons import LexiconRegistry

AIOHTTP_DEFAULT_LINE = 8190
PERCENT_ENCODED = 3  # worst case: each UTF-8 byte of a value travels as %XX
UNBOUNDED_STRING_BYTES = 1024  # a parameter with neither maxLength nor a bounded format (space, model, ...)
UNBOUNDED_ARRAY_ITEMS = 16
# Longest values of the atproto string formats: DIDs 2 KB (docs/protocol.md#space-uris), AT-URIs 8 KB.
FORMAT_MAX_BYTES = {
    "did": 2048,
    "at-uri": 8192,
    "uri": 8192,
    "at-identifier": 2048,
    "handle": 253,
    "nsid": 317,
    "cid": 128,
    "tid": 13,
    "record-key": 512,
    "datetime": 64,
    "language": 128,
}
# Header fields carry credentials and signatures whose claims hold DIDs and space URIs (up to 2 KB and
# 8 KB), base64url-encoded: 16 KiB leaves room for the longest of them; aiohttp's 8,190 would not.
MAX_FIELD_BYTES = 16 * 1024
MAX_HEADERS = 64  # engram reads a handful; browsers and proxies send a few dozen at most


def _value_bytes(schema: Mapping[str, Any]) -> int:
    kind = schema.get("type")
    if kind == "integer":
        return 20  # -9223372036854775808
    if kind == "boolean":
        return 5
    if kind == "string":
        if "maxLength" in schema:
            return int(schema["maxLength"])
        return FORMAT_MAX_BYTES.get(schema.get("format", ""), UNBOUNDED_STRING_BYTES)
    return UNBOUNDED_STRING_BYTES


def max_query_bytes(parameters: Mapping[str, Any] | None) -> int:
    """The longest query string these lexicon parameters allow (names, `=`, values and `&`s)."""
    total = 0
    for name, schema in ((parameters or {}).get("properties") or {}).items():
        if schema.get("type") == "array":
            items = int(schema.get("maxLength", UNBOUNDED_ARRAY_ITEMS))
            total += items * (len(name) + 2 + PERCENT_ENCODED * _value_bytes(schema.get("items") or {}))
        else:
            total += len(name) + 2 + PERCENT_ENCODED * _value_bytes(schema)
    return total


def max_request_line(registry: LexiconRegistry) -> int:
    """The longest `GET /xrpc/{nsid}?{query} HTTP/1.1` line any query method allows (never below aiohttp's
    default)."""
    longest = AIOHTTP_DEFAULT_LINE
    for nsid, method in registry.methods().items():
        if method.kind != "query":
            continue
        line = len(f"GET /xrpc/{nsid}? HTTP/1.1") + max_query_bytes(method.parameters)
        longest = max(longest, line)
    return longest
