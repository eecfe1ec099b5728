"""Fixtures for the space-host tests: engram with a hosted space, and members resolvable on loopback."""

from __future__ import annotations

import pytest
from support.fakes.did_server import FakeDidServer
from support.member_world import MODEL, Host, MemberPds

from engram.app import create_app
from engram.app_keys import context_key
from engram.config import override


@pytest.fixture
async def plc():
    server = await FakeDidServer().start()
    yield server
    await server.close()


@pytest.fixture
async def member_pds():
    pds = await MemberPds().start()
    yield pds
    await pds.close()


@pytest.fixture
def host_settings(settings, plc):
    return override(settings, plc_url=plc.url, dev=True)


@pytest.fixture
async def host(aiohttp_client, host_settings):
    """engram as the space host of one hosted space under its own DID."""
    client = await aiohttp_client(await create_app(host_settings))
    ctx = client.app[context_key]
    space = await ctx.services.spaces.create_hosted("team-notes", model=MODEL)
    return Host(client, ctx, space.uri)
