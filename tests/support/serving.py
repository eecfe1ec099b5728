"""Serving the app the way `engram serve` does (EngramAppRunner), and raw-socket helpers for the tests of
hostile and unlucky clients."""

from __future__ import annotations

import asyncio

from aiohttp.test_utils import TestServer

from engram.serving.runner import EngramAppRunner


class EngramTestServer(TestServer):
    """aiohttp's TestServer, but with engram's runner (header deadline, connection cap, JSON parser errors)."""

    async def _make_runner(self, **kwargs):
        # aiohttp's TestServer cancels handlers when their client disconnects; `engram serve` does not
        # (aiohttp's default), and the hang-up tests must see what production sees.
        kwargs.pop("handler_cancellation", None)
        return EngramAppRunner(self.app, **kwargs)


async def raw_exchange(port: int, data: bytes, *, timeout: float = 10.0) -> bytes:
    """Send raw bytes, then read until the server closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()


def split_response(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, body
