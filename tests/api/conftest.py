"""Fixtures for the API tests: the real service on a real port with a hosted space in it."""

from __future__ import annotations

import pytest
from support.api import MODEL, Reader
from support.fakes.object_store import moto_endpoint, snapshot_store_url  # noqa: F401 - fixtures (test_index_snapshots.py)
from support.serving import EngramTestServer

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.crypto_keys import PrivateKey


@pytest.fixture
def app_settings(settings):
    return settings


@pytest.fixture
async def engram(aiohttp_client, app_settings):
    client = await aiohttp_client(
        EngramTestServer(await create_app(app_settings))
    )  # served as `engram serve` does
    ctx = client.app[context_key]
    space = await ctx.services.spaces.create_hosted("api-tests", model=MODEL)
    return Reader(client, ctx, space.uri, PrivateKey.generate("ES256"))
