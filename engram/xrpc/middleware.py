"""One error middleware for every path, and CORS.

Every non-2xx answer, from any route (XRPC, did.json, unknown paths, aiohttp's own 404/405/413), leaves as
`{"error", "message"}`. Unexpected exceptions are logged with their traceback and answered with a generic
500: details never reach the client.
"""

from __future__ import annotations

import logging

import orjson
from aiohttp import web
from aiohttp.typedefs import Handler

from engram.errors import EngramError

from .errors import http_status, wire_headers

log = logging.getLogger("engram.http")

# What a browser may send and read: the atproto-space signature headers and the rate limit headers.
CORS_ALLOW_HEADERS = (
    "Authorization, Content-Type, Content-Digest, Atproto-Space-Audience, Signature-Input, Signature, "
    "Atproto-Proxy, Atproto-Accept-Labelers"
)
CORS_EXPOSE_HEADERS = "RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, RateLimit-Policy, Retry-After"

_HTTP_ERROR_NAMES = {
    400: "InvalidRequest",
    401: "AuthRequired",
    403: "Forbidden",
    404: "NotFound",
    405: "InvalidRequest",
    413: "PayloadTooLarge",
    429: "RateLimitExceeded",
    501: "MethodNotImplemented",
    503: "ServiceUnavailable",
}


def error_response(
    status: int, error: str, message: str, headers: dict[str, str] | None = None
) -> web.Response:
    if status == 503 and "Retry-After" not in (headers or {}):
        headers = {**(headers or {}), "Retry-After": "1"}  # every 503 tells the client when to come back
    return web.Response(
        status=status,
        body=orjson.dumps({"error": error, "message": message}),
        content_type="application/json",
        headers=headers,
    )


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except EngramError as err:
        return error_response(http_status(err), err.name, err.message, wire_headers(err))
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        name = _HTTP_ERROR_NAMES.get(
            exc.status, "InternalServerError" if exc.status >= 500 else "InvalidRequest"
        )
        message = exc.reason if exc.status != 404 else f"Not found: {request.path}"
        if exc.status == 413:
            message = "Request body is too large"
        return error_response(exc.status, name, message)
    except ConnectionResetError:
        if request.transport is not None and not request.transport.is_closing():
            log.exception("unhandled error on %s %s", request.method, request.path)
            return error_response(500, "InternalServerError", "Internal Server Error")
        # The client hung up (mid-body or mid-response): its doing, not a server fault. Nobody is left to
        # read an answer; 499 (nginx's "client closed request") is what the access log and metrics record.
        log.info("client went away during %s %s", request.method, request.path)
        return error_response(499, "ClientClosedRequest", "the client closed the connection")
    except Exception:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return error_response(500, "InternalServerError", "Internal Server Error")


@web.middleware
async def cors_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Answers CORS preflights; `add_cors_headers` (an on_response_prepare signal) marks every response,
    including streamed ones whose headers are sent before the handler returns."""
    own_preflight = request.match_info.route.method == "OPTIONS"  # a path with its own OPTIONS route
    if (
        request.method == "OPTIONS"
        and "Access-Control-Request-Method" in request.headers
        and not own_preflight
    ):
        return web.Response(
            status=204,
            headers={
                "Access-Control-Allow-Origin": "*",
                "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
                "Access-Control-Allow-Headers": CORS_ALLOW_HEADERS,
                "Access-Control-Max-Age": "600",
            },
        )
    return await handler(request)


async def add_cors_headers(request: web.Request, response: web.StreamResponse) -> None:
    response.headers.setdefault("Access-Control-Allow-Origin", "*")
    response.headers.setdefault("Access-Control-Expose-Headers", CORS_EXPOSE_HEADERS)


def install_http_basics(app: web.Application) -> None:
    app.middlewares.extend([cors_middleware, error_middleware])
    app.on_response_prepare.append(add_cors_headers)
