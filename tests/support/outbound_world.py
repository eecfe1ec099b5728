"""The loopback world of the outbound-request tests: a canary that records whether anything reached it and
a resolver pointing a DNS name at it. (Not conftest.py: test modules import these by name.)"""

from __future__ import annotations

import asyncio
import contextlib
import socket

from aiohttp import ThreadedResolver
from aiohttp.abc import AbstractResolver

CANARY_NAME = "canary.test"  # resolves to 127.0.0.1 through NamesResolver only
PLC_HOST = "127.0.0.2"  # the one internal address the guarded settings allow


class Canary:
    """A TCP listener on 127.0.0.1: counts connections (a TLS ClientHello or an HTTP request alike)."""

    def __init__(self) -> None:
        self.contacts = 0
        self.received = bytearray()
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> Canary:
        async def seen(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.contacts += 1
            with contextlib.suppress(TimeoutError):
                self.received += await asyncio.wait_for(reader.read(65536), 2)
            writer.close()

        self._server = await asyncio.start_server(seen, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()


class NamesResolver(AbstractResolver):
    """Name resolution for the guarded client: CANARY_NAME is 127.0.0.1, nothing else resolves."""

    def __init__(self) -> None:
        self.lookups: list[str] = []

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET):
        self.lookups.append(host)
        if host != CANARY_NAME:
            # numeric spellings (0x7f000001) as the C library reads them; no name reaches a real DNS server
            if not _numeric(host):
                raise OSError("no such name in tests")
            return await ThreadedResolver().resolve(host, port, family)
        return [{"hostname": host, "host": "127.0.0.1", "port": port, "family": socket.AF_INET,
                 "proto": 0, "flags": socket.AI_NUMERICHOST}]  # fmt: skip

    async def close(self) -> None:
        pass


def _numeric(host: str) -> bool:
    try:
        socket.inet_aton(host)
    except OSError:
        return ":" in host
    return True
