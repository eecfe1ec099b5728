"""Fixtures for the security regression suite (docs/security.md): a loopback canary that records whether
anything reached it, a fake PLC directory on another loopback address the guard is told to allow, a test
resolver pointing a DNS name at the canary, and engram with `ENGRAM_DEV=0` and no loopback allowance."""

from __future__ import annotations

import ipaddress
from dataclasses import replace

import pytest
from support.fakes.did_server import FakeDidServer
from support.member_world import MODEL, Host
from support.outbound_world import PLC_HOST, Canary, NamesResolver

from engram.app import create_app
from engram.app_keys import context_key


@pytest.fixture
async def canary():
    server = await Canary().start()
    yield server
    await server.close()


@pytest.fixture
async def plc():
    server = await FakeDidServer(PLC_HOST).start()
    yield server
    await server.close()


@pytest.fixture
def guarded_settings(settings, plc):
    """Production's outbound policy, except that the fake PLC directory's address is allowed."""
    return replace(
        settings, plc_url=plc.url, dev=False, outbound_allow=(ipaddress.ip_network(f"{PLC_HOST}/32"),)
    )


@pytest.fixture
def test_resolver():
    return NamesResolver()


@pytest.fixture
def start_engram(aiohttp_client, test_resolver):
    """Starts engram on a real port with the test resolver; returns the aiohttp test client (`.ctx` set)."""

    async def start(settings):
        app = await create_app(settings, outbound_resolver=test_resolver)
        client = await aiohttp_client(app)
        client.ctx = app[context_key]
        return client

    return start


@pytest.fixture
async def host(start_engram, guarded_settings):
    """engram, as space host of one hosted space, under the production outbound policy."""
    client = await start_engram(guarded_settings)
    space = await client.ctx.services.spaces.create_hosted("team-notes", model=MODEL)
    return Host(client, client.ctx, space.uri)
