"""The plugin's error shapes (FastAPI's): `{"detail": "..."}`, and `{"detail": [...]}` with 422 for
validation. Every failure under the Memory Bank prefix leaves in one of these shapes; nothing of the
XRPC envelope. A 500 says only "Internal Service Error", as upstream; the details go to the log."""

from __future__ import annotations

import logging

import orjson
from aiohttp import web

from ...errors import EngramError
from .models import RequestInvalid

log = logging.getLogger("engram.compat.memorybank")

STATUS_BY_KIND = {
    "invalid": 400,
    "auth": 401,
    "forbidden": 403,
    "not_found": 404,
    "conflict": 409,
    "too_large": 413,
    "rate_limited": 429,
    "internal": 500,
    "not_implemented": 501,
    "unavailable": 503,
}


def detail(status: int, message, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status,
        body=orjson.dumps({"detail": message}),
        content_type="application/json",
        headers=headers,
    )


@web.middleware
async def error_middleware(request: web.Request, handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except RequestInvalid as exc:
        return detail(422, exc.errors)
    except EngramError as err:
        status = STATUS_BY_KIND.get(err.kind, 500)
        headers = dict(err.headers)
        if status == 401:
            headers["WWW-Authenticate"] = 'Bearer realm="memorybank"'
        if status >= 500 and status != 503:
            log.error("memorybank: %r", err)
            return detail(500, "Internal Service Error")
        return detail(status, err.message, headers)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        message = "Request body is too large" if exc.status == 413 else exc.reason
        return detail(exc.status, message)
    except Exception:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return detail(500, "Internal Service Error")
