"""A deadline for reading a request body.

Without it a client could send headers announcing a large body and then trickle it (or nothing), holding
a handler and its buffers for as long as it liked. The middleware arms a timer when a request with a
body reaches the app; if the body has not fully arrived by then, the body stream fails with
`BodyReadTimeout` and the caller gets 408 `RequestTimeout`, and the connection is closed.
(A client that hangs up mid-body is handled by the error middleware, `engram/xrpc/middleware.py`.)
"""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from ..xrpc.middleware import error_response

log = logging.getLogger("engram.http")


class BodyReadTimeout(Exception):
    """The request body did not arrive within the body timeout."""


def body_deadline_middleware(timeout_s: float):
    @web.middleware
    async def body_deadline(request: web.Request, handler) -> web.StreamResponse:
        if not request.body_exists:
            return await handler(request)
        content = request.content

        def expire() -> None:
            if not content.is_eof():
                content.set_exception(BodyReadTimeout())

        timer = asyncio.get_running_loop().call_later(timeout_s, expire)
        try:
            return await handler(request)
        except BodyReadTimeout:
            log.info("request body from %s did not arrive within %.1f s", request.remote, timeout_s)
            response = error_response(
                408, "RequestTimeout", f"the request body did not arrive within {timeout_s:g} s"
            )
            response.force_close()
            return response
        finally:
            timer.cancel()

    return body_deadline
