"""A loopback reverse proxy: one address in front of one or more engram servers, requests handed to them
in turn, optionally adding `Authorization: Bearer <key>` to every request.

Two uses: the official MCP conformance suite (`@modelcontextprotocol/conformance`) has no way to send a
credential, and every /mcp request needs one; and two cluster nodes behind one address, as a load
balancer would put them, with consecutive requests of one client landing on different nodes. Everything
else goes through as sent, `Host` and `Origin` included (the suite's DNS-rebinding check sends foreign
ones), and answers are streamed back chunk by chunk (server-sent events)."""

from __future__ import annotations

import itertools
from collections import Counter
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "upgrade", "content-length"}


@dataclass
class Proxy:
    url: str
    served: Counter = field(default_factory=Counter)  # target base URL -> requests handed to it


@asynccontextmanager
async def loopback_proxy(targets: list[str], token: str | None = None):
    """Yields the running `Proxy`; `targets` are base URLs, taken round-robin per request."""
    session = aiohttp.ClientSession(auto_decompress=False)
    turn = itertools.cycle(targets)
    proxy = Proxy("")

    async def forward(request: web.Request) -> web.StreamResponse:
        target = next(turn)
        proxy.served[target] += 1
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        if token is not None:
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
    proxy.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
    try:
        yield proxy
    finally:
        await runner.cleanup()
        await session.close()
