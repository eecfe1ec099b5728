"""exportSpace draws on the space's search limits and runs at most once at a time per space (429 with
Retry-After otherwise); other spaces' exports are not held up."""

from __future__ import annotations

import asyncio
import socket
from urllib.parse import quote

import pytest
from support.api import MODEL, Reader, settings_with
from support.serving import EngramTestServer, split_response

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.crypto_keys import PrivateKey
from engram.store import MemoryWrite

NSID = "garden.engram.exportSpace"
BOUND_S = 30.0


async def _start(aiohttp_client, settings) -> Reader:
    client = await aiohttp_client(EngramTestServer(await create_app(settings)))
    ctx = client.app[context_key]
    space = await ctx.services.spaces.create_hosted("exported", model=MODEL)
    return Reader(client, ctx, space.uri, PrivateKey.generate("ES256"))


async def _big_space(reader: Reader, name: str) -> str:
    """A space whose export (about 12 MB) is larger than every socket buffer between server and client,
    so an export whose client stops reading stays in flight."""
    space = await reader.ctx.services.spaces.create_hosted(name, model=MODEL)
    text = "x" * 29_000
    author = reader.ctx.settings.service_did
    await reader.ctx.services.memories.write(
        space.uri, [MemoryWrite(author=author, text=f"{i} {text}") for i in range(420)]
    )
    return space.uri


async def _stalled_export(
    reader: Reader, space: str
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, int]:
    """Start an export on a raw socket with a tiny receive buffer and read only its head; returns the
    stream, its writer and the body's length."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", reader.client.server.port))
    stream_reader, writer = await asyncio.open_connection(sock=sock)
    headers = "".join(f"{k}: {v}\r\n" for k, v in reader.headers(space).items())
    writer.write(
        f"GET /xrpc/{NSID}?space={quote(space, safe='')} HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode()
    )
    head = await asyncio.wait_for(stream_reader.readuntil(b"\r\n\r\n"), BOUND_S)
    status, response_headers, _ = split_response(head)
    assert status == 200
    return stream_reader, writer, int(response_headers["content-length"])


async def test_one_export_per_space_at_a_time(aiohttp_client, settings):
    reader = await _start(aiohttp_client, settings)
    big = await _big_space(reader, "big")
    stalled, writer, size = await _stalled_export(reader, big)
    try:
        second = await reader.get(NSID, space=big)
        assert second.status == 429
        assert (await second.json())["error"] == "RateLimitExceeded"
        assert int(second.headers["Retry-After"]) >= 1
        other = await reader.get(NSID)  # another space's export is not held up
        assert other.status == 200 and other.headers["Content-Type"] == "application/x-tar"
        await other.read()
        assert size > 10_000_000
        await asyncio.wait_for(stalled.readexactly(size), BOUND_S)  # let the first one finish
    finally:
        writer.close()
    # Once the first export's handler has returned (it may lag its last byte a little), the next runs.
    give_up = asyncio.get_running_loop().time() + BOUND_S
    while (third := await reader.get(NSID, space=big)).status == 429:
        assert asyncio.get_running_loop().time() < give_up, "the first export never released the space"
        await asyncio.sleep(0.05)
    assert third.status == 200
    await third.read()


@pytest.fixture
def tight_settings(settings):
    return settings_with(settings, search_rate=0.001, search_burst=2)


async def test_exports_spend_the_space_search_tokens(aiohttp_client, tight_settings):
    reader = await _start(aiohttp_client, tight_settings)
    for _ in range(2):
        r = await reader.get(NSID)
        assert r.status == 200
        await r.read()
    refused = await reader.get(NSID)
    assert refused.status == 429 and "Retry-After" in refused.headers
    assert refused.headers["RateLimit-Remaining"] == "0"
