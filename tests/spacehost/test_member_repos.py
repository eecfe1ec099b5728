"""Members' repos of a hosted space (docs/space-host.md#members-repos): a member's repo host tells engram,
as space host, that the member wrote (notifyWrite with the member's service auth, over HTTP on loopback);
listRepos then lists that repo after the authority's, and the registered syncers are told."""

from __future__ import annotations

import base64
import secrets
import time

import pytest
from aiohttp import web
from support.fakes.did_server import random_plc_did
from support.sync import until

from engram.auth.credential import mint_space_credential
from engram.auth.crypto_keys import PrivateKey
from engram.auth.did_document import Service
from engram.auth.service_jwt import mint_service_jwt
from engram.auth.space_signature import sign_space_request
from engram.store.tid import encode_tid, new_tid

NOTIFY = "com.atproto.space.notifyWrite"


@pytest.fixture
async def syncer(plc):
    did, got = random_plc_did(), []

    async def notify(request: web.Request) -> web.Response:
        got.append(await request.json())
        return web.json_response({})

    app = web.Application()
    app.router.add_post(f"/xrpc/{NOTIFY}", notify)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    plc.register(did, PrivateKey.generate("ES256").public_key, {"#atproto_space_syncer": Service("S", url)})
    yield did, got
    await runner.cleanup()


def _hash() -> dict:
    return {"$bytes": base64.b64encode(secrets.token_bytes(32)).decode()}


async def test_a_members_repo_host_notifies_and_list_repos_lists_the_repo(host, plc, syncer):
    ctx, authority = host.ctx, host.ctx.settings.service_did
    holder = PrivateKey.generate("ES256")
    credential = mint_space_credential(ctx.keyring.private_key(authority), issuer=authority, space=host.space,
                                       holder_did_key=holder.public_key.did_key)  # fmt: skip
    space_host = sign_space_request(holder, credential, authority)
    syncer_did, received = syncer
    await until(lambda: ctx.notifier.pending == 0, "the space's first commit to be announced")
    r = await host.client.post("/xrpc/com.atproto.space.registerNotify",
                               json={"space": host.space, "service": syncer_did}, headers=space_host)  # fmt: skip
    assert r.status == 200, await r.text()

    writer, writer_key = random_plc_did(), PrivateKey.generate("ES256K")
    reader, reader_key = random_plc_did(), PrivateKey.generate("ES256K")
    for did, key in ((writer, writer_key), (reader, reader_key)):
        plc.register(did, key.public_key)
    await ctx.services.members.grant(host.space, writer, write=True)
    await ctx.services.members.grant(host.space, reader)

    async def notify(iss, key, **body):
        token = mint_service_jwt(key, iss=iss, aud=f"{authority}#atproto_space_host", lxm=NOTIFY)
        body = {"space": host.space, "repo": iss, "repoRev": new_tid(), "hash": _hash(), **body}
        r = await host.client.post(f"/xrpc/{NOTIFY}", json=body, headers={"Authorization": f"Bearer {token}"})
        return r.status, (await r.json()) if r.content_type == "application/json" else None, body

    async def list_repos(**params) -> list[dict]:
        repos, cursor = [], None
        while True:
            q = {"space": host.space, "limit": "1", **params, **({"cursor": cursor} if cursor else {})}
            r = await host.client.get("/xrpc/com.atproto.space.listRepos", params=q, headers=space_host)
            assert r.status == 200, await r.text()
            page = await r.json()
            if not page["repos"]:
                return repos
            repos += page["repos"]
            cursor = page["cursor"]

    before = await list_repos()
    assert [e["did"] for e in before] == [authority]

    status, _, sent = await notify(writer, writer_key)
    assert status == 200
    listed = await list_repos()
    assert [e["did"] for e in listed] == [authority, writer]
    entry = listed[1]
    assert (entry["repoRev"], entry["hash"]) == (sent["repoRev"], sent["hash"])
    assert entry["spaceRev"] > listed[0]["spaceRev"]

    await until(lambda: received, "the write passed on to the registered syncer")
    assert received == [{"space": host.space, "repo": writer, "repoRev": sent["repoRev"], "hash": sent["hash"],
                         "spaceRev": entry["spaceRev"], "prevSpaceRev": listed[0]["spaceRev"]}]  # fmt: skip

    # A rev not newer than the tracked one changes nothing; one far in the future is refused.
    status, _, _ = await notify(writer, writer_key, repoRev=sent["repoRev"])
    assert status == 200 and await list_repos() == listed
    future = encode_tid(int((time.time() + 3600) * 1_000_000), 0)
    status, out, _ = await notify(writer, writer_key, repoRev=future)
    assert (status, out["error"]) == (400, "FutureRev")
    status, out, _ = await notify(writer, writer_key, hash=None)
    assert status == 400

    # Only a member with write access, for its own repo; refused before anyone's DID is resolved.
    fetched = sum(plc.requests.values())
    stranger = random_plc_did()
    for iss, key, body in [
        (reader, reader_key, {}),
        (stranger, writer_key, {}),
        (writer, writer_key, {"repo": reader}),
    ]:
        status, out, _ = await notify(iss, key, **body)
        assert (status, out["error"]) == (403, "Forbidden"), out
    assert sum(plc.requests.values()) == fetched
    status, out, _ = await notify(writer, PrivateKey.generate("ES256K"))  # the member's name, another key
    assert (status, out["error"]) == (401, "BadJwtSignature")
    assert await list_repos() == listed
    assert len(received) == 1

    # Once the member loses write access, its repo is no longer one of the space's.
    await ctx.services.members.grant(host.space, writer, write=False)
    assert [e["did"] for e in await list_repos()] == [authority]
