"""Reader auth (docs/protocol.md#reader-auth) steps 2-5 through a real aiohttp server on a real port,
resolving authorities through the fake PLC directory. The cases live in reader_cases.py so the same table
can run against the real app."""

import pytest
from aiohttp import web
from multidict import CIMultiDict
from support.reader_cases import ACCEPTED, REJECTED, ReaderCase, ReaderWorld

from engram.auth.did_resolver import DidResolver
from engram.auth.reader import ReaderVerifier
from engram.errors import NotAuthenticated
from engram.xrpc.errors import http_status

SERVICE_DID = "did:web:engram.example.com"


@pytest.fixture
async def world_client(aiohttp_client, did_server, http_session):
    world = ReaderWorld(SERVICE_DID)
    for did, doc in world.documents().items():
        did_server.register_raw(did, doc.to_json())
    verifier = ReaderVerifier(SERVICE_DID, DidResolver(http_session, plc_url=did_server.url))

    async def search(request: web.Request) -> web.Response:
        try:
            auth = await verifier.verify(request.headers, request.query.get("space", ""))
        except NotAuthenticated as e:
            return web.json_response(e.payload(), status=http_status(e))
        return web.json_response({"issuer": auth.issuer, "holder": auth.holder_key.did_key, "jti": auth.jti})

    app = web.Application()
    app.router.add_get("/xrpc/garden.engram.searchMemories", search)
    return world, await aiohttp_client(app), verifier


async def _send(client, case: ReaderCase, world: ReaderWorld):
    request = case.build(world)
    resp = await client.get(
        "/xrpc/garden.engram.searchMemories",
        params={"space": request.space},
        headers=CIMultiDict(request.headers),
    )
    return resp.status, await resp.json()


@pytest.mark.parametrize("case", REJECTED, ids=lambda c: c.name)
async def test_rejected_request(world_client, case):
    world, client, _ = world_client
    status, body = await _send(client, case, world)
    assert (status, body["error"]) == (case.status, case.error), body
    assert body["message"]


@pytest.mark.parametrize("case", ACCEPTED, ids=lambda c: c.name)
async def test_accepted_request(world_client, case):
    world, client, _ = world_client
    status, body = await _send(client, case, world)
    assert status == 200, body
    assert body["holder"] == world.holder.public_key.did_key
    assert body["issuer"] in (world.k256_authority, world.p256_authority)


async def test_signature_and_audience_are_checked_even_when_the_credential_is_cached(world_client):
    world, client, verifier = world_client
    credential = world.credential()
    ok = await client.get(
        "/xrpc/garden.engram.searchMemories",
        params={"space": world.space},
        headers=CIMultiDict(world.signed(credential)),
    )
    assert ok.status == 200
    assert len(verifier.credentials._verified) == 1
    wrong_aud = world.signed(credential, audience="did:web:elsewhere.example")
    from support.reader_cases import PrivateKey  # a fresh key the credential does not bind

    wrong_key = world.signed(credential, holder=PrivateKey.generate("ES256"))
    for headers, error in ((wrong_aud, "BadSpaceSignature"), (wrong_key, "BadSpaceSignature")):
        resp = await client.get(
            "/xrpc/garden.engram.searchMemories", params={"space": world.space}, headers=CIMultiDict(headers)
        )
        assert (resp.status, (await resp.json())["error"]) == (401, error)
    other_space = await client.get(
        "/xrpc/garden.engram.searchMemories",
        params={"space": world.space + "x"},
        headers=CIMultiDict(world.signed(credential)),
    )
    assert (other_space.status, (await other_space.json())["error"]) == (401, "InvalidToken")


def test_the_matrix_covers_every_required_case():
    names = {c.name for c in REJECTED + ACCEPTED}
    required = {
        "missing-authorization",
        "missing-audience",
        "duplicate-authorization",
        "duplicate-audience",
        "bearer-scheme",
        "expired",
        "iat-in-future",
        "lifetime-over-3600",
        "typ-jwt",
        "alg-does-not-match-key",
        "kid-unknown",
        "sub-is-another-space",
        "iss-is-not-the-authority",
        "high-s-credential",
        "wrong-audience",
        "signed-by-another-holder-key",
        "der-signature",
        "tampered-audience-header",
        "extra-unknown-param-created",
        "secp256k1-holder-key",
        "params-absent",
        "keyid-then-alg",
        "alg-then-keyid",
        "padded-base64",
        "unpadded-base64",
        "es256k-authority-kid-atproto",
        "es256-authority-kid-atproto-space",
    }
    assert required <= names
