"""Fixtures for the sync tests: a fake spaces network and the real engram app syncing from it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from support.sync import running_network

from engram.app import create_app
from engram.app_keys import context_key


@pytest.fixture
async def network():
    async with running_network() as net:
        yield net


@pytest.fixture
def sync_settings(settings, network):
    # dev: the fake hosts live on 127.0.0.1, which the syncer refuses otherwise
    return replace(settings, plc_url=network.plc.url, poll_interval=0, sync_timeout=2.0, dev=True)


@pytest.fixture
async def engram(aiohttp_client, sync_settings, network):
    client = await aiohttp_client(await create_app(sync_settings))
    network.engram_url = str(client.make_url("")).rstrip("/")
    network.engram_did = sync_settings.service_did
    client.ctx = client.app[context_key]
    return client
