"""Push over real TLS on loopback (docs/space-host.md#write-notifications, docs/sync.md#learning-about-writes):
every host serves https with a certificate from a test CA the test process trusts (tests/support/fakes/tls.py), so
the notifications travel as they do in a deployment, where space hosts deliver only to https endpoints.

- instance A hosts a space, instance B syncs it and registers for notifications; A pushes notifyWrite to B
  after each commit and B indexes the write with no poll running;
- a lost push (the registration gone) is found by B's poll;
- a member's spaces-capable PDS pushes notifyWrite to engram, its space host, which pulls the member's repo
  from that PDS over https and indexes it.

No assertion depends on timing: each waits for its condition (scripts/bench_push.py measures the lag)."""

from __future__ import annotations

from dataclasses import replace

import aiohttp
import numpy as np
import pytest
from aiohttp.test_utils import TestServer
from support.fakes.did_server import FakeDidServer, random_plc_did
from support.fakes.member_pds import SpacesPds
from support.fakes.tls import LoopbackCA
from support.sync import until

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.credential import mint_space_credential
from engram.auth.crypto_keys import PrivateKey
from engram.auth.did_document import Service
from engram.auth.space_signature import sign_space_request
from engram.search.vectors import encode_query_vector
from engram.store import Embedding, MemoryWrite, ModelSpec
from engram.store import notify_registrations as store_registrations

MODEL = ModelSpec("test-model", "sha256:test", 16)


def vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(MODEL.dims).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def ca() -> LoopbackCA:
    ca = LoopbackCA.create()
    ca.trust_in_this_process()
    return ca


@pytest.fixture
async def plc():
    server = await FakeDidServer().start()
    yield server
    await server.close()


async def https_engram(aiohttp_client, settings, ca: LoopbackCA):
    """engram served over TLS; the test's own client trusts the test CA."""
    server = TestServer(await create_app(settings))
    await server.start_server(ssl=ca.server_context())  # aiohttp_client finds it started
    client = await aiohttp_client(server, connector=aiohttp.TCPConnector(ssl=ca.client_context()))
    client.ctx = client.app[context_key]
    client.url = str(client.make_url("")).rstrip("/")
    assert client.url.startswith("https://127.0.0.1:")
    return client


class Pair:
    """A (the space host) and B (the syncer), both https, and a member whose account B reads with."""

    def __init__(self, a, a_key, b, pds: SpacesPds, space: str):
        self.a, self.a_key, self.b, self.pds, self.space = a, a_key, b, pds, space
        self.a_did = a.ctx.settings.service_did
        self.seed = 0

    async def write(self, text: str, seed: int):
        embedding = Embedding(MODEL.model, MODEL.digest, MODEL.dims, vector(seed))
        (written,) = await self.a.ctx.services.memories.write(
            self.space, [MemoryWrite(author=self.a_did, text=text, embedding=embedding)]
        )
        return written

    async def b_has(self, text: str, seed: int) -> bool:
        holder = PrivateKey.generate("ES256")
        credential = mint_space_credential(self.a_key, issuer=self.a_did, space=self.space,
                                           holder_did_key=holder.public_key.did_key)  # fmt: skip
        params = {"space": self.space, "vector": encode_query_vector(vector(seed)), "model": MODEL.model,
                  "modelDigest": MODEL.digest, "limit": "10"}  # fmt: skip
        headers = sign_space_request(holder, credential, self.b.ctx.settings.service_did)
        r = await self.b.get("/xrpc/garden.engram.searchMemories", params=params, headers=headers)
        return r.status == 200 and text in {m["text"] for m in (await r.json())["memories"]}


@pytest.fixture
async def pair(aiohttp_client, settings, plc, ca, tmp_path, request):
    a_key, a_did = PrivateKey.generate("ES256"), random_plc_did()
    a = await https_engram(aiohttp_client, replace(settings, data_dir=tmp_path / "a", service_did=a_did,
                           signing_key=a_key.to_multibase(), plc_url=plc.url, dev=True), ca)  # fmt: skip
    plc.register(a_did, a_key.public_key, {"#atproto_space_host": Service("AtprotoSpaceHost", a.url),
                                           "#atproto_pds": Service("AtprotoPersonalDataServer", a.url)})  # fmt: skip
    space = (await a.ctx.services.spaces.create_hosted("shared", model=MODEL)).uri
    pds = await SpacesPds(plc).start()
    try:
        reader = pds.add_account()
        await a.ctx.services.members.grant(space, reader.did)
        # B: https public URL, so it registers for pushes; its DID document names its syncer endpoint.
        b_key, b_did = PrivateKey.generate("ES256"), random_plc_did()
        b_settings = replace(settings, data_dir=tmp_path / "b", service_did=b_did, signing_key=b_key.to_multibase(),
                             public_url="https://b.engram.test", plc_url=plc.url, dev=True,
                             poll_interval=getattr(request, "param", 0), sync_timeout=10.0)  # fmt: skip
        b = await https_engram(aiohttp_client, b_settings, ca)
        plc.register(b_did, b_key.public_key, {"#atproto_space_syncer": Service("AtprotoSpaceSyncer", b.url)})
        await b.ctx.syncer.add_space(space, reader.did, reader.password)

        async def registered() -> bool:
            return space in b.ctx.syncer.registered_until and b.ctx.syncer.idle(space)

        await until(registered, "B registered at A for notifications", timeout=60.0)
        yield Pair(a, a_key, b, pds, space)
    finally:
        await pds.close()


async def test_a_pushes_each_write_to_b_over_tls(pair):
    delivered = pair.a.ctx.notifier.delivered
    passes = pair.b.ctx.syncer._runners[pair.space].passes
    await pair.write("the release train leaves on thursdays", 1)
    await until(
        lambda: pair.b_has("the release train leaves on thursdays", 1), "the push reaching B", timeout=60.0
    )
    # B's poll ran once, at start-up, before the space was added: this pass came from A's push, over TLS.
    assert pair.a.ctx.notifier.delivered > delivered
    assert pair.b.ctx.syncer._runners[pair.space].passes > passes
    assert pair.b.ctx.syncer.poll_ticks == 1


@pytest.mark.parametrize("pair", [0.3], indirect=True)
async def test_a_lost_push_is_caught_up_by_the_poll(pair):
    a = pair.a.ctx
    space = await a.services.spaces.find(pair.space)
    for registration in await a.store.read(store_registrations.live_registrations, pair.space, 0):
        await a.store.write(store_registrations.unregister, space.id, registration.service)  # pushes lost
    delivered, failed = a.notifier.delivered, a.notifier.failed
    await pair.write("a write nobody was told about", 2)
    await until(
        lambda: pair.b_has("a write nobody was told about", 2), "B's poll finding the write", timeout=60.0
    )
    assert (a.notifier.delivered, a.notifier.failed) == (delivered, failed)  # it was never pushed


async def test_a_members_pds_pushes_to_engram_over_tls(aiohttp_client, settings, plc, ca):
    engram = await https_engram(
        aiohttp_client, replace(settings, plc_url=plc.url, dev=True, poll_interval=0), ca
    )
    ctx, authority = engram.ctx, engram.ctx.settings.service_did
    space = (await ctx.services.spaces.create_hosted("garden", model=MODEL)).uri
    pds = await SpacesPds(plc, tls=(ca.server_context(), ca.client_context())).start()
    try:
        assert pds.url.startswith("https://")
        pds.trust_authority(ctx.keyring.document(authority), engram.url)
        member = pds.add_account()
        await ctx.services.members.grant(space, member.did, write=True)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ca.client_context())) as http:
            login = await (await http.post(f"{pds.url}/xrpc/com.atproto.server.createSession",
                                           json={"identifier": member.did, "password": member.password})).json()  # fmt: skip
            record = {"$type": "garden.engram.memory", "text": "the on-call rota lives in the wiki",
                      "createdAt": "2026-12-01T10:00:00.000Z",
                      "embedding": {"model": MODEL.model, "modelDigest": MODEL.digest, "dims": MODEL.dims,
                                    "encoding": "f16le", "vector": {"$bytes": _b64(vector(7))}}}  # fmt: skip
            r = await http.post(f"{pds.url}/xrpc/com.atproto.space.createRecord",
                                json={"space": space, "repo": member.did, "collection": "garden.engram.memory",
                                      "record": record}, headers={"Authorization": f"Bearer {login['accessJwt']}"})  # fmt: skip
            uri = (await r.json())["uri"]

        async def indexed() -> bool:
            page, _ = await ctx.services.memories.list(space)
            return uri in {m.uri for m in page}

        await until(indexed, "the member's write indexed by its space host", timeout=60.0)
        await pds.settled()
        assert pds.pushes == [200]  # delivered over TLS; no poll ran after start-up
        assert ctx.syncer.poll_ticks == 1
    finally:
        await pds.close()


def _b64(v: np.ndarray) -> str:
    from engram.atrepo.blocks import b64encode

    return b64encode(v.astype("<f2").tobytes())
