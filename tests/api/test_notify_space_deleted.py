"""com.atproto.space.notifySpaceDeleted over HTTP: only the space's authority may delete it, and a token
from anyone else is refused before any DID document is fetched (a counting fake DID server proves it)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from support.fakes.did_server import FakeDidServer, random_plc_did

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.crypto_keys import PrivateKey
from engram.auth.service_jwt import mint_service_jwt

NSID = "com.atproto.space.notifySpaceDeleted"
PATH = f"/xrpc/{NSID}"


@pytest.fixture
async def did_server():
    server = await FakeDidServer().start()
    yield server
    await server.close()


@pytest.fixture
async def world(aiohttp_client, settings, did_server):
    """The app resolving DIDs at the fake server, a space whose authority is a did:plc served there, and
    two strangers (a did:plc and a did:web) with documents of their own there."""
    client = await aiohttp_client(await create_app(replace(settings, plc_url=did_server.url, dev=True)))
    ctx = client.app[context_key]
    authority, stranger = random_plc_did(), random_plc_did()
    keys = {did: PrivateKey.generate("ES256") for did in (authority, stranger, did_server.web_did())}
    for did, key in keys.items():
        did_server.register(did, key.public_key)
    space = await ctx.services.spaces.create_hosted("doomed", authority=authority)
    return client, ctx, space, authority, keys


def _bearer(ctx, key, iss: str) -> dict[str, str]:
    return {
        "Authorization": "Bearer "
        + mint_service_jwt(key, iss=iss, aud=f"{ctx.settings.service_did}#atproto_space_syncer", lxm=NSID)
    }


async def test_tokens_from_anyone_but_the_authority_cause_no_fetch(world, did_server):
    client, ctx, space, authority, keys = world
    for iss, key in keys.items():
        if iss == authority:
            continue
        for _ in range(5):
            r = await client.post(PATH, json={"space": space.uri}, headers=_bearer(ctx, key, iss))
            assert r.status == 403, await r.text()
            assert (await r.json())["error"] == "Forbidden"
    # A token claiming to be the authority but naming a space that does not exist: no fetch either.
    r = await client.post(
        PATH, json={"space": space.uri + "-nope"}, headers=_bearer(ctx, keys[authority], authority)
    )
    assert r.status == 400 and (await r.json())["error"] == "UnknownSpace"
    assert sum(did_server.requests.values()) == 0
    assert not (await ctx.services.spaces.find(space.uri)).deleted


async def test_the_authority_deletes_its_space(world, did_server):
    client, ctx, space, authority, keys = world
    r = await client.post(PATH, json={"space": space.uri}, headers=_bearer(ctx, keys[authority], authority))
    assert r.status == 200, await r.text()
    assert did_server.requests[authority] >= 1 and set(did_server.requests) == {authority}
    gone = await ctx.services.spaces.find(space.uri)
    assert gone is None or gone.deleted
