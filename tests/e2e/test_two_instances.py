"""Two engram instances on loopback: A hosts a space (space host + signed repo), B indexes it as a synced
space through the sync protocol, verifying every commit. Only the network edge is fake: a PLC directory
serving the DIDs and a member's PDS that signs the member's delegation tokens (docs/space-host.md,
docs/sync.md)."""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import replace

import numpy as np
import pytest
from aiohttp import web
from support.fakes.did_server import FakeDidServer, random_plc_did

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.credential import mint_space_credential
from engram.auth.crypto_keys import PrivateKey
from engram.auth.delegation import DELEGATION_TYP
from engram.auth.did_document import Service
from engram.auth.jws import sign_jws
from engram.auth.space_signature import sign_space_request
from engram.search.vectors import encode_query_vector
from engram.store import Embedding, MemoryWrite, ModelSpec

MODEL = ModelSpec("test-model", "sha256:test", 16)


class MemberPds:
    """The member's PDS: createSession with an app password, then getDelegationToken for a space."""

    def __init__(self, did: str, key: PrivateKey, password: str) -> None:
        self.did, self.key, self.password = did, key, password
        self.sessions: set[str] = set()
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> MemberPds:
        app = web.Application()
        app.router.add_post("/xrpc/com.atproto.server.createSession", self._session)
        app.router.add_get("/xrpc/com.atproto.space.getDelegationToken", self._token)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}"
        return self

    async def _session(self, request: web.Request) -> web.Response:
        body = await request.json()
        if (body.get("identifier"), body.get("password")) != (self.did, self.password):
            return web.json_response({"error": "AuthenticationRequired", "message": "bad login"}, status=401)
        access = secrets.token_hex(16)
        self.sessions.add(access)
        return web.json_response({"did": self.did, "accessJwt": access, "refreshJwt": secrets.token_hex(16)})

    async def _token(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization", "").removeprefix("Bearer ") not in self.sessions:
            return web.json_response({"error": "ExpiredToken", "message": "no session"}, status=400)
        space = request.query["space"]
        now = int(time.time())
        claims = {"iss": self.did, "sub": space, "aud": f"{space.split('/')[2]}#atproto_space_host",
                  "iat": now, "exp": now + 60, "jti": secrets.token_hex(16)}  # fmt: skip
        return web.json_response(
            {"token": sign_jws(self.key, {"typ": DELEGATION_TYP, "kid": "#atproto"}, claims)}
        )


def vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(MODEL.dims).astype(np.float32)
    return v / np.linalg.norm(v)


async def until(condition, what: str, timeout: float = 60.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        await asyncio.sleep(0.05)


@pytest.fixture
async def plc():
    server = await FakeDidServer().start()
    yield server
    await server.close()


async def test_b_indexes_a_hosted_space_of_a_through_verified_sync(aiohttp_client, settings, plc, tmp_path):
    # A: a space host under a did:plc whose key it holds.
    a_key, a_did = PrivateKey.generate("ES256"), random_plc_did()
    a_settings = replace(settings, data_dir=tmp_path / "a", service_did=a_did, signing_key=a_key.to_multibase(),
                         plc_url=plc.url, dev=True)  # fmt: skip
    a = await aiohttp_client(await create_app(a_settings))
    a_url = str(a.make_url("")).rstrip("/")
    plc.register(a_did, a_key.public_key, {"#atproto_space_host": Service("AtprotoSpaceHost", a_url),
                                           "#atproto_pds": Service("AtprotoPersonalDataServer", a_url)})  # fmt: skip
    a_ctx = a.app[context_key]
    space = (await a_ctx.services.spaces.create_hosted("shared", model=MODEL)).uri

    # A member A has never seen, with an account at its own PDS; A grants it read access.
    member_key, member_did, password = (
        PrivateKey.generate("ES256K"),
        random_plc_did(),
        secrets.token_urlsafe(12),
    )
    pds = await MemberPds(member_did, member_key, password).start()
    try:
        plc.register(
            member_did, member_key.public_key, {"#atproto_pds": Service("AtprotoPersonalDataServer", pds.url)}
        )
        await a_ctx.services.members.grant(space, member_did)
        texts = ["the release train leaves on thursdays", "staging runs postgres 16.2"]
        written = await a_ctx.services.memories.write(space, [
            MemoryWrite(author=a_did, text=t, embedding=Embedding(MODEL.model, MODEL.digest, MODEL.dims, vector(i)))
            for i, t in enumerate(texts)
        ])  # fmt: skip

        # B: an ordinary engram that syncs the space with the member's account.
        b_settings = replace(settings, data_dir=tmp_path / "b", plc_url=plc.url, dev=True, poll_interval=0,
                             sync_timeout=10.0)  # fmt: skip
        b = await aiohttp_client(await create_app(b_settings))
        b_ctx = b.app[context_key]
        await b_ctx.syncer.add_space(space, member_did, password)
        holder = PrivateKey.generate("ES256")

        async def search(seed: int) -> list[str]:
            credential = mint_space_credential(a_key, issuer=a_did, space=space,
                                               holder_did_key=holder.public_key.did_key, ttl=600)  # fmt: skip
            headers = sign_space_request(holder, credential, b_settings.service_did)
            params = {"space": space, "vector": encode_query_vector(vector(seed)), "model": MODEL.model,
                      "modelDigest": MODEL.digest, "limit": "10"}  # fmt: skip
            r = await b.get("/xrpc/garden.engram.searchMemories", params=params, headers=headers)
            body = await r.json()
            return [m["text"] for m in body.get("memories", [])] if r.status == 200 else []

        async def b_has(text: str) -> bool:
            return text in await search(0)

        await until(lambda: b_has(texts[0]), "B indexed A's memories")
        assert (await search(1))[0] == texts[1]  # B's own index, ranked by B
        # Every memory reached B verified against A's signed commits: a CID mismatch would have been refused.
        ours = await b_ctx.services.memories.list(space)
        assert {m.cid for m in ours[0]} == {r.cid for r in written}

        # A deletes one; B catches up on its next pass (a poll; A's push needs an https syncer URL).
        await a_ctx.services.memories.delete(space, a_did, written[0].rkey)
        b_ctx.syncer.request(space, full=True)  # what the poll backstop does

        async def gone() -> bool:
            return not await b_has(texts[0])

        await until(gone, "the delete on A reached B")
        assert texts[1] in await search(1)
    finally:
        await pds.runner.cleanup()
