"""Helpers for the MCP tests: the real app on a real port whose public URL is that port (the OAuth
discovery documents point there), hosted spaces and keys, and the SDK's own client over HTTP.

(Not in conftest.py: test modules import these by name.)"""

from __future__ import annotations

import asyncio
import errno
import json
import socket
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from engram.app import create_app
from engram.app_keys import context_key
from engram.service import apikeys
from engram.store import MemoryWrite

# A raw initialize of the 2025-06-18 revision and the Accept header its POSTs carry (tests that drive /mcp
# without the SDK's client).
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Served:
    server: object  # aiohttp TestServer
    ctx: object
    base: str

    @property
    def mcp_url(self) -> str:
        return self.base + "/mcp"

    async def space(self, name: str) -> str:
        return (await self.ctx.services.spaces.create_hosted(name)).uri

    async def key(self, primary: str, *extra: str, scopes=("read", "write")) -> tuple[str, object]:
        key, token = await apikeys.create_api_key(self.ctx.store, primary, scopes, "test", extra)
        return token, key

    async def write(self, space_uri: str, texts, **fields) -> list:
        author = self.ctx.settings.service_did
        return await self.ctx.services.memories.write(
            space_uri, [MemoryWrite(author=author, text=t, **fields) for t in texts]
        )

    @asynccontextmanager
    async def client(self, token: str | None = None, mode: str = "auto"):
        """The SDK's client; mode "legacy" speaks the 2025 protocol (sessions, answers as event streams)."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(self.mcp_url, http_client=http), mode=mode) as client,
        ):
            yield client


async def serve(aiohttp_server, settings) -> Served:
    """The public URL must name the port before the app is built, so a free port is picked first; on a
    shared machine another process may take it in between, so a taken port means trying another."""
    for attempt in range(5):
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        try:
            server = await aiohttp_server(await create_app(replace(settings, public_url=base)), port=port)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or attempt == 4:
                raise
            continue
        return Served(server, server.app[context_key], base)
    raise AssertionError("unreachable")


def result_of(call) -> dict:
    """A tool call's structured answer; fails the test with the tool's message if it was an error."""
    assert not call.is_error, call.content
    return call.structured_content


def error_of(call) -> str:
    assert call.is_error, call.structured_content
    return call.content[0].text


def resource_json(read) -> dict:
    return json.loads(read.contents[0].text)


@dataclass
class Engram:
    """A real `engram serve` (its default multi-process configuration) and a key made on its data dir."""

    base: str
    token: str
    space: str

    @property
    def mcp_url(self) -> str:
        return self.base + "/mcp"


@asynccontextmanager
async def engram_serve(tmp_path, processes: int = 2, **extra: str):
    """`engram serve` with `processes` serving processes on one port, until both listen; a hosted space
    and a read/write API key for it are made first through the CLI's context (a third process)."""
    import os
    import sys

    from engram.config import read_env
    from engram.lifecycle import open_context
    from support.engram_process import listeners, start_engram, stop

    data_dir = tmp_path / "data"
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}

    def env(port: int) -> dict[str, str]:
        return base_env | {
            "ENGRAM_DATA_DIR": str(data_dir),
            "ENGRAM_EMBEDDER": "hashing",
            "ENGRAM_PORT": str(port),
            "ENGRAM_PUBLIC_URL": f"http://127.0.0.1:{port}",
            "ENGRAM_PROCESSES": str(processes),
            "ENGRAM_LOG_LEVEL": "warning",
            **extra,
        }

    async with open_context(read_env(env(0))) as ctx:
        space = await ctx.services.spaces.create_hosted("notes")
        _, token = await apikeys.create_api_key(ctx.store, space.uri, ["read", "write"], "agent", [])
    proc, port = start_engram([sys.executable, "-m", "engram", "serve"], env, tmp_path / "serve.log")
    try:
        for _ in range(600):  # start_engram returns once one process answers; the others may still start
            if listeners(port) == processes:
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError(f"not all {processes} serving processes listen")
        yield Engram(f"http://127.0.0.1:{port}", token, space.uri)
    finally:
        stop(proc)
