"""Revoking credentials (docs/space-host.md#revoking-credentials), over HTTP on loopback.

As space host: a member's credential from the real exchange reads the space until the authority removes the
member; from then on that same credential is refused on engram's own reads, and every registered syncer is
sent com.atproto.space.notifyCredentialRevoked naming it, with the authority's service auth. As syncer: the
authority of a synced space sends notifyCredentialRevoked, and engram refuses those credentials there."""

from __future__ import annotations

import time

import pytest
from aiohttp import web
from support.fakes.did_server import random_plc_did
from support.member_world import new_member
from support.sync import until

from engram.auth.credential import mint_space_credential
from engram.auth.crypto_keys import PrivateKey
from engram.auth.did_document import Service
from engram.auth.jws import parse_jws
from engram.auth.service_jwt import ServiceAuthVerifier, mint_service_jwt
from engram.auth.space_signature import sign_space_request
from engram.store import spaces as store_spaces
from engram.store.uris import space_uri
from engram.sync.access import HeldCredential

REVOKED = "com.atproto.space.notifyCredentialRevoked"


@pytest.fixture
async def syncer(plc):
    """A registered syncer's endpoint on loopback, recording notifyCredentialRevoked."""
    did, got = random_plc_did(), []

    async def revoked(request: web.Request) -> web.Response:
        got.append((request.headers.get("Authorization", ""), await request.json()))
        return web.json_response({})

    app = web.Application()
    app.router.add_post(f"/xrpc/{REVOKED}", revoked)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    plc.register(did, PrivateKey.generate("ES256").public_key, {"#atproto_space_syncer": Service("S", url)})
    yield did, got
    await runner.cleanup()


async def test_a_removed_members_credentials_are_refused_and_syncers_are_told(host, plc, syncer):
    ctx, authority = host.ctx, host.ctx.settings.service_did
    syncer_did, received = syncer
    holder = PrivateKey.generate("ES256")
    registered = await host.client.post(
        "/xrpc/com.atproto.space.registerNotify", json={"space": host.space, "service": syncer_did},
        headers=sign_space_request(holder, mint_space_credential(
            ctx.keyring.private_key(authority), issuer=authority, space=host.space,
            holder_did_key=holder.public_key.did_key), authority),
    )  # fmt: skip
    assert registered.status == 200, await registered.text()

    member, other = new_member(plc), new_member(plc)
    for m in (member, other):
        await ctx.services.members.grant(host.space, m.did)
    credentials = {}
    for m in (member, other):
        r = await host.exchange(m.headers(host.space))
        assert r.status == 200, await r.text()
        credentials[m.did] = (await r.json())["credential"]

    async def reads(m):
        """(garden.engram reader auth, hosted repo read) statuses and errors with m's credential."""
        a = await host.read("garden.engram.listMemories", credentials[m.did], m.holder)
        b = await host.read("com.atproto.space.getRecord", credentials[m.did], m.holder, audience=authority,
                            repo=authority, collection="garden.engram.config", rkey="self")  # fmt: skip
        return [(r.status, (await r.json()).get("error")) for r in (a, b)]

    assert await reads(member) == [(200, None), (200, None)]

    # The authority removes the member with the standard call, as its PDS proxies it.
    token = mint_service_jwt(ctx.keyring.private_key(authority), iss=authority,
                             aud=f"{authority}#atproto_space_host", lxm="com.atproto.simplespace.removeMember")  # fmt: skip
    r = await host.client.post("/xrpc/com.atproto.simplespace.removeMember",
                               json={"space": host.space, "did": member.did},
                               headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    assert r.status == 200, await r.text()

    assert await reads(member) == [(401, "CredentialRevoked"), (401, "CredentialRevoked")]
    assert await reads(other) == [(200, None), (200, None)]  # another member's credential still reads

    await until(lambda: received, "notifyCredentialRevoked at the syncer")
    authorization, body = received[0]
    assert body == {"space": host.space, "credentials": [parse_jws(credentials[member.did]).payload["jti"]]}
    verifier = ServiceAuthVerifier(syncer_did, ctx.resolver, audiences=[f"{syncer_did}#atproto_space_syncer"])
    assert (await verifier.verify(authorization, REVOKED)).iss == authority


async def test_the_authority_of_a_synced_space_revokes_credentials_engram_then_refuses(host, plc):
    ctx = host.ctx
    authority, key = random_plc_did(), PrivateKey.generate("ES256K")
    plc.register(authority, key.public_key)
    uri = space_uri(authority, "followed")
    await ctx.store.write(store_spaces.create_space, uri, "synced")

    def credential_for(holder: PrivateKey) -> str:
        return mint_space_credential(
            key, issuer=authority, space=uri, holder_did_key=holder.public_key.did_key
        )

    revoked_holder, kept_holder = PrivateKey.generate("ES256"), PrivateKey.generate("ES256")
    revoked, kept = credential_for(revoked_holder), credential_for(kept_holder)
    revoked_jti = parse_jws(revoked).payload["jti"]
    r = await host.read("garden.engram.listMemories", revoked, revoked_holder, space=uri)
    assert r.status == 200, await r.text()
    # engram holds a credential of its own for the space, the one the authority revokes.
    held = HeldCredential(uri, revoked, revoked_holder, time.time() + 600, revoked_jti)
    ctx.syncer.credentials._held[uri] = held

    def notification(iss: str, signer: PrivateKey, aud: str | None = None) -> dict[str, str]:
        aud = aud or f"{ctx.settings.service_did}#atproto_space_syncer"
        return {"Authorization": "Bearer " + mint_service_jwt(signer, iss=iss, aud=aud, lxm=REVOKED)}

    body = {"space": uri, "credentials": [revoked_jti]}
    # Only the authority, addressed to engram's syncer service: anything else changes nothing.
    stranger, stranger_key = random_plc_did(), PrivateKey.generate("ES256")
    plc.register(stranger, stranger_key.public_key)
    for headers, status in [
        (notification(stranger, stranger_key), 403),
        (notification(authority, key, aud=ctx.settings.service_did), 403),
        (notification(authority, PrivateKey.generate("ES256K")), 401),
    ]:
        r = await host.client.post(f"/xrpc/{REVOKED}", json=body, headers=headers)
        assert r.status == status, await r.text()
    r = await host.read("garden.engram.listMemories", revoked, revoked_holder, space=uri)
    assert r.status == 200
    r = await host.client.post(f"/xrpc/{REVOKED}", json={**body, "credentials": []},
                               headers=notification(authority, key))  # fmt: skip
    assert r.status == 400  # the lexicon's minLength: 1

    r = await host.client.post(f"/xrpc/{REVOKED}", json=body, headers=notification(authority, key))
    assert r.status == 200, await r.text()
    r = await host.read("garden.engram.listMemories", revoked, revoked_holder, space=uri)
    assert (r.status, (await r.json())["error"]) == (401, "CredentialRevoked")
    r = await host.read("garden.engram.listMemories", kept, kept_holder, space=uri)
    assert r.status == 200
    assert uri not in ctx.syncer.credentials._held  # the next sync request exchanges a fresh credential

    # A hosted space is engram's own: nobody else notifies revocations of it.
    r = await host.client.post(f"/xrpc/{REVOKED}", json={**body, "space": host.space},
                               headers=notification(ctx.settings.service_did,
                                                    ctx.keyring.private_key(ctx.settings.service_did)))  # fmt: skip
    assert (r.status, (await r.json())["error"]) == (400, "UnknownSpace")
