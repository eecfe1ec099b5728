"""A loopback reverse proxy that adds `Authorization: Bearer <key>` to every request it passes on.

The official MCP conformance suite (`@modelcontextprotocol/conformance`) has no way to send a credential,
and every /mcp request needs one; this is the network edge between them. Everything else goes through as
sent, `Host` and `Origin` included (the suite's DNS-rebinding check sends foreign ones), and answers are
streamed back chunk by chunk (server-sent events)."""

from __future__ import annotations

from contextlib import asynccontextmanager

import aiohttp
from aiohttp import web

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "upgrade", "content-length"}


@asynccontextmanager
async def bearer_proxy(target: str, token: str):
    """Yields the proxy's base URL; `target` is engram's base URL."""
    session = aiohttp.ClientSession(auto_decompress=False)

    async def forward(request: web.Request) -> web.StreamResponse:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        headers["Authorization"] = f"Bearer {token}"
        async with session.request(
            request.method,
            target + request.path_qs,
            headers=headers,
            data=await request.read(),
            allow_redirects=False,
        ) as answer:
            response = web.StreamResponse(status=answer.status)
            for name, value in answer.headers.items():
                if name.lower() not in HOP_BY_HOP:
                    response.headers.add(name, value)
            await response.prepare(request)
            async for chunk in answer.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
        await session.close()
