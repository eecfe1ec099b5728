"""The plugin's error shapes (FastAPI's): `{"detail": "..."}`, and `{"detail": [...]}` with 422 for
validation. The shim framework (engram/compat/errors.py) hands every failure on the Memory Bank paths to
`render_error`, so nothing of the XRPC envelope leaves them. As upstream, any authentication failure
reads "Invalid or missing token" and a 500 says only "Internal Service Error" (docs/memorybank.md "Errors")."""

from __future__ import annotations

import orjson
from aiohttp import web

from ...errors import EngramError
from ..errors import HTTP_STATUS_BY_KIND
from .models import RequestInvalid

_FASTAPI_TEXT = {404: "Not Found", 405: "Method Not Allowed", 500: "Internal Service Error"}


def detail(status: int, message, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status,
        body=orjson.dumps({"detail": message}),
        content_type="application/json",
        headers=headers,
    )


def render_error(err: EngramError) -> web.Response:
    if isinstance(err, RequestInvalid):
        return detail(422, err.errors)
    status = HTTP_STATUS_BY_KIND.get(err.kind, 500)
    headers = dict(err.headers)
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="memorybank"'
        return detail(401, "Invalid or missing token", headers)
    if status == 400 and err.name == "InvalidJson":
        return detail(422, [{"loc": ["body"], "msg": err.message, "type": "value_error.jsondecode"}])
    return detail(status, _FASTAPI_TEXT.get(status, err.message), headers)
