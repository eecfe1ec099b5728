"""The shims' error middleware: every failure on a shim's paths leaves in that shim's own shape.

aiohttp's own answers (404 for an unknown path, 405 for a wrong verb, 413 for an oversized body) arrive
here as `HTTPException`s; they are turned into domain errors (`engram/errors.py`) so a shim's
`render_error` has one kind of input. Unexpected exceptions are logged with their traceback and rendered
as the shim's 500, with a generic message.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

from aiohttp import web

from ..errors import (
    EngramError,
    InternalFailure,
    InvalidInput,
    NotAllowed,
    NotAuthenticated,
    NotFound,
    RateLimited,
    TooLarge,
    Unavailable,
)
from .shim import Shim

log = logging.getLogger("engram.compat")


# The HTTP status of each domain-error family, as REST APIs spell it (engram/errors.py). The shims render
# their own bodies; the status convention is the same for all of them (XRPC has its own table).
HTTP_STATUS_BY_KIND = {
    "invalid": 400,
    "auth": 401,
    "forbidden": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "conflict": 409,
    "too_large": 413,
    "rate_limited": 429,
    "internal": 500,
    "not_implemented": 501,
    "unavailable": 503,
}


class MethodNotAllowed(EngramError):
    """The path exists but not for this verb (aiohttp's 405), kept apart so shims can answer 405."""

    kind = "method_not_allowed"
    default_name = "MethodNotAllowed"


class UnsupportedMediaType(InvalidInput):
    default_name = "UnsupportedMediaType"


_BY_STATUS: dict[int, type[EngramError]] = {
    400: InvalidInput,
    401: NotAuthenticated,
    403: NotAllowed,
    404: NotFound,
    405: MethodNotAllowed,
    413: TooLarge,
    415: UnsupportedMediaType,
    429: RateLimited,
    503: Unavailable,
}


def from_http_exception(exc: web.HTTPException, request: web.Request) -> EngramError:
    cls = _BY_STATUS.get(exc.status, InternalFailure if exc.status >= 500 else InvalidInput)
    if exc.status == 404:
        message = f"Not found: {request.path}"
    elif exc.status == 405:
        message = f"Method {request.method} is not allowed on {request.path}"
    elif exc.status == 413:
        message = "Request body is too large"
    else:
        message = exc.reason
    return cls(message)


def owner(shims: Sequence[Shim], path: str) -> Shim | None:
    for shim in shims:
        if shim.owns(path):
            return shim
    return None


def _roots(shims: Sequence[Shim]) -> tuple[str, ...]:
    """The first path segment of everything the shims own ("/v1/vector" -> "/v1/"): a path starting with
    none of them belongs to no shim, which spares every XRPC request the walk over each shim's paths."""
    owned = [p for shim in shims for p in (*shim.paths, shim.openapi_path)]
    return tuple(p[: p.index("/", 1) + 1] if "/" in p[1:] else p for p in owned)


def _with_retry_after(response: web.StreamResponse, err: EngramError) -> web.StreamResponse:
    """An unavailable answer with a retry hint says when to retry in every shim, as XRPC's does: the
    domain error carries the number (HACKING.md "Layers and errors"), the door renders the header."""
    if isinstance(err, Unavailable) and err.retry_after is not None and "Retry-After" not in response.headers:
        response.headers["Retry-After"] = str(max(1, math.ceil(err.retry_after)))
    return response


def shim_error_middleware(shims: Sequence[Shim]):
    roots = _roots(shims)

    @web.middleware
    async def middleware(request: web.Request, handler) -> web.StreamResponse:
        path = request.path
        shim = owner(shims, path) if path.startswith(roots) else None
        if shim is None:
            return await handler(request)
        try:
            return await handler(request)
        except EngramError as err:
            if err.kind == "internal":
                log.error("internal error on %s %s: %s", request.method, request.path, err.message)
                err = InternalFailure("Internal server error")
            return _with_retry_after(shim.render_error(err), err)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            return shim.render_error(from_http_exception(exc, request))
        except Exception:
            log.exception("unhandled error on %s %s", request.method, request.path)
            return shim.render_error(InternalFailure("Internal server error"))

    return middleware
