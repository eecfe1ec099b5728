"""The per-connection HTTP handler: aiohttp's, with three things added.

- **Header deadline.** A client must deliver a request's line and headers within `header_timeout_s` of
  connecting (or of the first byte of its next request on a kept-alive connection); else the connection
  is closed. aiohttp itself only bounds idle time between requests (the keep-alive timeout), so a client
  sending a header byte every few seconds (slowloris) held a connection, and a file descriptor, forever.
- **Connection cap.** Past `max_connections` open connections, a new one gets a 503 and is closed at once,
  before the process runs out of file descriptors (where asyncio's accept loop starts failing instead).
- **Parser errors as JSON.** Malformed requests (request line too long, too many headers, a bad
  Content-Length) are rejected by aiohttp's parser before any middleware runs; aiohttp answered them in
  text/plain and logged a traceback for each. `handle_error` answers `{"error", "message"}` like every
  other engram error and logs one line; only real server faults (5xx) keep their traceback.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web
from aiohttp.http_exceptions import LineTooLong
from aiohttp.web_protocol import RequestHandler

from .log_throttle import Throttle, throttled_warning

log = logging.getLogger("engram.http")
_throttle = Throttle()


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout_s: float
    max_connections: int


def _cap_reached_bytes() -> bytes:
    body = orjson.dumps(
        {"error": "ServiceUnavailable", "message": "too many open connections; retry shortly"}
    )
    head = (
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


CAP_REACHED = _cap_reached_bytes()


def parser_error_message(exc: BaseException | None, fallback: str | None) -> str:
    if isinstance(exc, LineTooLong):
        return f"the request line or a header field is longer than {exc.args[1]} bytes"
    text = getattr(exc, "message", None) or fallback or "malformed HTTP request"
    return text if len(text) <= 200 else text[:200] + "..."  # parser messages quote the client's bytes


class EngramRequestHandler(RequestHandler):
    def __init__(self, manager: Any, *, limits: ConnectionLimits, **kwargs: Any):
        super().__init__(manager, **kwargs)
        self._engram_limits = limits
        self._engram_server = manager
        self._head_timer: asyncio.TimerHandle | None = None
        self._in_request = False

    # -- connection cap and header deadline -------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if len(self._engram_server.connections) > self._engram_limits.max_connections:
            throttled_warning(
                log,
                _throttle,
                "cap",
                "connection cap of %d reached; turning clients away",
                self._engram_limits.max_connections,
            )
            transport.write(CAP_REACHED)  # type: ignore[attr-defined]
            self.force_close()  # the transport flushes the 503 before it closes
            return
        self._arm_head_deadline()

    def data_received(self, data: bytes) -> None:
        # The first byte of a request (not of a body being read) starts that request's header deadline.
        if data and not self._in_request and self._head_timer is None:
            self._arm_head_deadline()
        super().data_received(data)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._cancel_head_deadline()
        super().connection_lost(exc)

    def request_head_complete(self) -> None:
        """Called by the server's request factory when a request's line and headers have been parsed."""
        self._in_request = True
        self._cancel_head_deadline()

    async def finish_response(self, request: Any, resp: web.StreamResponse, start_time: float | None):
        try:
            return await super().finish_response(request, resp, start_time)
        finally:
            self._in_request = False

    def _arm_head_deadline(self) -> None:
        loop = asyncio.get_running_loop()
        self._head_timer = loop.call_later(self._engram_limits.header_timeout_s, self._head_deadline_passed)

    def _cancel_head_deadline(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_deadline_passed(self) -> None:
        self._head_timer = None
        if self._in_request:
            return
        throttled_warning(
            log,
            _throttle,
            "head",
            "closed a connection that did not send its request headers within %.1f s",
            self._engram_limits.header_timeout_s,
        )
        self.force_close()

    # -- parser errors --------------------------------------------------------------------------------
    def handle_error(
        self,
        request: Any,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if status >= 500:
            log.error("error handling request from %s", request.remote, exc_info=exc)
            error, text = "InternalServerError", "Internal Server Error"
        else:
            error, text = "InvalidRequest", parser_error_message(exc, message)
            log.info("rejected a malformed request from %s: %s", request.remote, text)
        if request.writer.output_size > 0:  # a response is already on its way; the connection is broken
            raise ConnectionError("response already sent; cannot send the error too")
        resp = web.Response(
            status=status,
            body=orjson.dumps({"error": error, "message": text}),
            content_type="application/json",
        )
        resp.force_close()
        return resp
