"""Reading a shim request's JSON body and query parameters into plain values (bad input -> InvalidInput).

aiohttp's `request.json()` raises a bare `JSONDecodeError` and accepts any top-level value; shims want an
object and a clear 400-class error in their own shape, so bodies are decoded here with orjson.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from ..errors import InvalidInput


async def read_json_object(request: web.Request, *, allow_empty: bool = False) -> dict[str, Any]:
    """The body as a JSON object. 413 for an oversized body comes from aiohttp's `client_max_size`."""
    raw = await request.read()
    if not raw.strip():
        if allow_empty:
            return {}
        raise InvalidInput("the request body must be a JSON object", "InvalidJson")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidInput(f"the request body is not valid JSON: {exc}", "InvalidJson") from None
    if not isinstance(body, dict):
        raise InvalidInput("the request body must be a JSON object", "InvalidJson")
    return body


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        body=orjson.dumps(body), status=status, content_type="application/json", headers=headers
    )
