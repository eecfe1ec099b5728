"""The CLI's XRPC client retries queries the server asks to retry, and gives up with the server's error."""

from __future__ import annotations

import aiohttp
import pytest
from aiohttp import web

from engram.cli.xrpc_client import RemoteError, XrpcClient

CALLS = web.AppKey("calls", dict)


def flaky_app(failures: int, status: int = 503, error: str = "IndexLoading") -> web.Application:
    calls = {"n": 0}

    async def handler(request: web.Request) -> web.Response:
        calls["n"] += 1
        if calls["n"] <= failures:
            return web.json_response(
                {"error": error, "message": "retry shortly"}, status=status, headers={"Retry-After": "0.1"}
            )
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_route("*", "/xrpc/io.example.x", handler)
    app[CALLS] = calls
    return app


async def test_queries_are_retried_while_the_server_says_retry(aiohttp_server):
    server = await aiohttp_server(flaky_app(failures=2))
    async with aiohttp.ClientSession() as session:
        client = XrpcClient(str(server.make_url("/")), session)
        assert await client.call("GET", client.url("io.example.x")) == {"ok": True}
    assert server.app[CALLS]["n"] == 3


async def test_procedures_are_not_retried(aiohttp_server):
    server = await aiohttp_server(flaky_app(failures=1, status=429, error="RateLimitExceeded"))
    async with aiohttp.ClientSession() as session:
        client = XrpcClient(str(server.make_url("/")), session)
        with pytest.raises(RemoteError) as caught:
            await client.call("POST", client.url("io.example.x"), body=b"{}")
    assert caught.value.name == "RateLimitExceeded" and server.app[CALLS]["n"] == 1
