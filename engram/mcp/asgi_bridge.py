"""Serving one aiohttp request with an ASGI app: the MCP SDK's streamable-HTTP transport is ASGI (Starlette)
while engram serves HTTP with aiohttp.

Hand-written on purpose. The maintained adapter, aiohttp-asgi (0.7.1), answers every `receive()` after the
body with another empty `http.request` message at once. The SDK's SSE responses (sse-starlette) call
`receive()` in a loop until `http.disconnect` arrives, so with that adapter the loop never suspends and
the whole event loop hangs on the first streamed answer. Here, once the body is read, `receive()` waits
until the response is complete or the client has gone, and only then says `http.disconnect`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

AsgiApp = Callable[[dict, Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Awaitable[None]]

# `engram serve` runs aiohttp without handler cancellation (its default), so a client that disconnects
# does not cancel the handler and there is no disconnect callback: a streamed answer checks its transport
# this often while it waits. (With cancellation on, the app is simply cancelled.)
DISCONNECT_POLL_S = 1.0
BODY_CHUNK = 64 * 1024


_RUNNING: set[asyncio.Task] = set()  # apps still running for a client that left (keeps them referenced)


def _finished_app(task: asyncio.Task) -> None:
    _RUNNING.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved here: an app that outlived its handler has no one else to report to


def http_scope(request: web.Request, extra: Mapping[str, Any]) -> dict[str, Any]:
    host, port = (
        (request.transport.get_extra_info("sockname") or ("", 0))[:2] if request.transport else ("", 0)
    )
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode("latin-1"),
        "query_string": request.query_string.encode("latin-1"),
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in request.raw_headers],
        "client": (request.remote or "", 0),
        "server": (host, port),
        "state": {},
        **extra,
    }


async def serve_asgi(
    app: AsgiApp,
    request: web.Request,
    extra_scope: Mapping[str, Any],
    *,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
) -> web.StreamResponse:
    """`body`: the request body when the caller has already read it; `headers`: added to the answer."""
    finished = asyncio.Event()
    body_done = False
    response: web.StreamResponse | None = None

    def client_gone() -> bool:
        transport = request.transport
        return transport is None or transport.is_closing()

    async def receive() -> dict[str, Any]:
        nonlocal body_done
        if not body_done and body is not None:
            body_done = True
            return {"type": "http.request", "body": body, "more_body": False}
        if not body_done:
            try:
                chunk = await request.content.read(BODY_CHUNK)
            except ConnectionError:  # the client left mid-body
                body_done = True
                return {"type": "http.disconnect"}
            body_done = request.content.at_eof()
            return {"type": "http.request", "body": chunk, "more_body": not body_done}
        while not finished.is_set() and not client_gone():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(finished.wait(), DISCONNECT_POLL_S)

        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal response
        if message["type"] == "http.response.start":
            response = web.StreamResponse(status=message["status"])
            for name, value in message.get("headers", ()):
                response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
            for name, value in (headers or {}).items():
                response.headers[name] = value
            await response.prepare(request)
        elif message["type"] == "http.response.body" and response is not None and not finished.is_set():
            body = message.get("body", b"")
            try:
                if body:
                    await response.write(body)
                if not message.get("more_body", False):
                    await response.write_eof()
                    finished.set()
            except ConnectionError:
                # the client left mid-answer (an ordinary disconnect): the app hears `http.disconnect`
                # next instead of an exception it would log as an error
                finished.set()

    async def run() -> None:
        try:
            await app(http_scope(request, extra_scope), receive, send)
        except ConnectionError:
            pass  # the client went away mid-answer: nothing left to tell it
        finally:
            finished.set()

    # An ASGI app learns that its client left from `http.disconnect`, never by being cancelled, and the
    # SDK relies on that (a session whose opening request is cancelled is discarded). aiohttp cancels the
    # handler of a lost connection when handler_cancellation is on, so the app runs in a task of its own
    # that such a cancellation does not reach; it then finds the client gone and ends by itself.
    task = asyncio.create_task(run())
    _RUNNING.add(task)
    task.add_done_callback(_finished_app)
    await asyncio.shield(task)
    if response is None:
        raise web.HTTPInternalServerError()
    return response
