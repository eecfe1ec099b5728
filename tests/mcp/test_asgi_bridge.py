"""The aiohttp -> ASGI bridge under /mcp streams: a body part reaches the client before the app has sent
the next one, the request body arrives whole, and an app waiting for `http.disconnect` hears it when the
client goes away (instead of spinning on empty `http.request` messages)."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from aiohttp import web

from engram.mcp.asgi_bridge import serve_asgi


class StreamingApp:
    """Reads the body, streams two parts (the second only once the test allows it), then waits for the
    client to leave, as sse-starlette does."""

    def __init__(self):
        self.release = asyncio.Event()
        self.disconnected = asyncio.Event()
        self.ended = asyncio.Event()
        self.receives_after_body = 0
        self.scope = None

    async def __call__(self, scope, receive, send):
        self.scope = scope
        try:
            body = b""
            while True:
                message = await receive()
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            headers = [(b"content-type", b"text/event-stream"), (b"x-len", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": b"data: first\n\n", "more_body": True})
            await self.release.wait()
            await send({"type": "http.response.body", "body": b"data: second\n\n", "more_body": True})
            while (await receive())["type"] != "http.disconnect":
                self.receives_after_body += 1
            self.disconnected.set()
        finally:
            self.ended.set()


async def poll(condition, bound_s: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + bound_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition never became true"
        await asyncio.sleep(0.02)


# engram serve's default (no cancellation), and aiohttp's option that cancels a lost client's handler
@pytest.mark.parametrize("handler_cancellation", [False, True])
async def test_the_bridge_streams_and_ends_when_the_client_leaves(handler_cancellation):
    asgi = StreamingApp()

    async def handler(request: web.Request) -> web.StreamResponse:
        return await serve_asgi(asgi, request, {"engram.test": "seen"})

    app = web.Application()
    app.router.add_post("/stream", handler)
    runner = web.AppRunner(app, handler_cancellation=handler_cancellation)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # as scripts/benchlib.py does: no public accessor
    try:
        body = b"x" * 200_000  # several chunks
        async with (
            aiohttp.ClientSession() as http,
            http.post(f"http://127.0.0.1:{port}/stream", data=body) as response,
        ):
            assert response.status == 200 and response.headers["x-len"] == str(len(body))
            assert response.headers["content-type"] == "text/event-stream"
            # The first part arrives while the app still holds the second one back.
            assert await response.content.readuntil(b"\n\n") == b"data: first\n\n"
            asgi.release.set()
            assert await response.content.readuntil(b"\n\n") == b"data: second\n\n"
            response.close()  # the client goes away mid-stream
        await poll(asgi.ended.is_set)
        assert asgi.disconnected.is_set()  # told by an http.disconnect message, never cancelled
        assert asgi.receives_after_body == 0  # it waited; it never spun on empty messages
        assert asgi.scope["engram.test"] == "seen" and asgi.scope["path"] == "/stream"
    finally:
        await runner.cleanup()


class LateWriter:
    """Streams one part, then, once the client has gone, keeps sending: as the SDK's SSE writer does when a
    client leaves between events."""

    def __init__(self):
        self.release = asyncio.Event()
        self.ended = asyncio.Event()
        self.raised: list[OSError] = []

    async def __call__(self, scope, receive, send):
        try:
            while (await receive()).get("more_body"):
                pass
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"data: first\n\n", "more_body": True})
            await self.release.wait()
            try:
                for _ in range(200):
                    await send({"type": "http.response.body", "body": b"x" * 65536, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            except OSError as exc:  # a lost connection (ConnectionResetError): what the SDK would log
                self.raised.append(exc)
            assert (await receive())["type"] == "http.disconnect"
        finally:
            self.ended.set()


async def test_writes_after_the_client_left_end_the_answer_quietly():
    asgi = LateWriter()
    served: list[web.StreamResponse] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        served.append(await serve_asgi(asgi, request, {}))
        return served[-1]

    app = web.Application()
    app.router.add_post("/stream", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    try:
        async with aiohttp.ClientSession() as http:
            async with http.post(f"http://127.0.0.1:{port}/stream", data=b"{}") as response:
                assert await response.content.readuntil(b"\n\n") == b"data: first\n\n"
                response.connection.transport.abort()  # gone at once, unread data and all
            asgi.release.set()
            await poll(asgi.ended.is_set)
        assert asgi.raised == []
    finally:
        await runner.cleanup()
