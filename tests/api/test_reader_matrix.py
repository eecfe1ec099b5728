"""Reader auth (docs/protocol.md#reader-auth) through the real service: the auth issue's whole reader
table against searchMemories, with authorities resolved from a fake PLC directory on loopback (no resolver
mocks)."""

from __future__ import annotations

import numpy as np
import pytest
from multidict import CIMultiDict
from support.api import MODEL, settings_with, vector_params
from support.fakes.did_server import FakeDidServer
from support.reader_cases import ACCEPTED, REJECTED, ReaderWorld

from engram.app import create_app
from engram.app_keys import context_key

NSID = "garden.engram.searchMemories"


@pytest.fixture
async def world_client(aiohttp_client, settings):
    did_server = await FakeDidServer().start()
    world = ReaderWorld(settings.service_did)
    for did, doc in world.documents().items():
        did_server.register_raw(did, doc.to_json())
    client = await aiohttp_client(await create_app(settings_with(settings, plc_url=did_server.url)))
    spaces = client.app[context_key].services.spaces
    for uri in (world.space, world.space_p256):
        authority, name = uri.split("/")[2], uri.rsplit("/", 1)[1]
        await spaces.create_hosted(name, authority=authority, model=MODEL)
    yield world, client
    await did_server.close()


async def send(client, world, case):
    request = case.build(world)
    params = {"space": request.space, **vector_params(np.ones(MODEL.dims))}
    r = await client.get(f"/xrpc/{NSID}", params=params, headers=CIMultiDict(request.headers))
    return r.status, await r.json()


@pytest.mark.parametrize("case", REJECTED, ids=lambda c: c.name)
async def test_rejected_through_the_service(world_client, case):
    world, client = world_client
    status, body = await send(client, world, case)
    assert (status, body["error"]) == (case.status, case.error), body


@pytest.mark.parametrize("case", ACCEPTED, ids=lambda c: c.name)
async def test_accepted_through_the_service(world_client, case):
    world, client = world_client
    status, body = await send(client, world, case)
    assert status == 200, body
    assert body == {"memories": []}
