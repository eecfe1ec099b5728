"""The delegation token against the reference vector, client attestations against a fake client on
loopback, and the services engram's did.json publishes as a space host."""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path

import pytest
from aiohttp import web
from support.fakes.static_resolver import StaticResolver
from support.member_world import new_member

from engram.auth.client_attestation import ATTESTATION_TYP
from engram.auth.crypto_keys import PrivateKey, PublicKey
from engram.auth.delegation import DelegationVerifier
from engram.auth.jws import b64url_encode, sign_jws
from engram.errors import NotAuthenticated

VECTORS = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "atproto-space-vectors.json").read_text()
)
DELEGATION = next(t for t in VECTORS["tokens"] if t["type"] == "delegation")


def _vector_verifier(now: float) -> DelegationVerifier:
    resolver = StaticResolver()
    resolver.add_key(DELEGATION["opts"]["iss"], PublicKey.from_did_key(DELEGATION["signingKey"]))
    return DelegationVerifier(resolver, now=lambda: now)


async def test_the_reference_delegation_token_verifies_at_its_clock():
    opts = DELEGATION["opts"]
    authority = opts["aud"].split("#")[0]
    verified = await _vector_verifier(VECTORS["now"]).verify(
        f"Bearer {DELEGATION['jwt']}", opts["sub"], authority
    )
    assert verified.iss == opts["iss"] and verified.sub == opts["sub"]


@pytest.mark.parametrize(
    ("now_offset", "space", "authority", "reason"),
    [
        (120, None, None, "JwtExpired"),
        (0, "at://did:example:space/space/app.bsky.group/other", None, "another space"),
        (0, None, "did:example:elsewhere", "BadJwtAudience"),
    ],
)
async def test_the_reference_delegation_token_is_refused_out_of_bounds(now_offset, space, authority, reason):
    opts = DELEGATION["opts"]
    verifier = _vector_verifier(VECTORS["now"] + now_offset)
    with pytest.raises(NotAuthenticated) as info:
        await verifier.verify(
            f"Bearer {DELEGATION['jwt']}", space or opts["sub"], authority or opts["aud"].split("#")[0]
        )
    assert info.value.name == "InvalidDelegationToken" and reason in info.value.message


async def test_did_json_publishes_engram_as_space_host_and_pds(host):
    doc = await (await host.client.get("/.well-known/did.json")).json()
    services = {s["id"]: s for s in doc["service"]}
    url = host.ctx.settings.public_url
    assert services["#atproto_space_host"] == {
        "id": "#atproto_space_host", "type": "AtprotoSpaceHost", "serviceEndpoint": url}  # fmt: skip
    assert services["#atproto_pds"]["serviceEndpoint"] == url
    assert services["#atproto_pds"]["type"] == "AtprotoPersonalDataServer"


class FakeClient:
    """An OAuth client publishing its metadata (with an inline JWKS) on loopback."""

    def __init__(self) -> None:
        self.key = PrivateKey.generate("ES256")
        self.kid = "client-key-1"
        self.runner: web.AppRunner | None = None
        self.client_id = ""

    def jwk(self) -> dict:
        numbers = self.key.public_key._impl.public_numbers()
        return {"kty": "EC", "crv": "P-256", "kid": self.kid, "x": b64url_encode(numbers.x.to_bytes(32, "big")),
                "y": b64url_encode(numbers.y.to_bytes(32, "big"))}  # fmt: skip

    async def start(self) -> FakeClient:
        app = web.Application()

        async def metadata(request: web.Request) -> web.Response:
            return web.json_response({"client_id": self.client_id, "jwks": {"keys": [self.jwk()]}})

        app.router.add_get("/client-metadata.json", metadata)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        self.client_id = f"http://127.0.0.1:{self.runner.addresses[0][1]}/client-metadata.json"
        return self

    def attestation(self, aud: str, key: PrivateKey | None = None, **claims) -> str:
        now = int(time.time())
        payload = {"iss": self.client_id, "sub": self.client_id, "aud": aud, "iat": now, "exp": now + 60,
                   "jti": secrets.token_hex(8), **claims}  # fmt: skip
        return sign_jws(key or self.key, {"typ": ATTESTATION_TYP, "kid": self.kid}, payload)


@pytest.fixture
async def oauth_client():
    client = await FakeClient().start()
    yield client
    await client.runner.cleanup()


async def test_a_verified_client_attestation_is_accepted_once(host, plc, oauth_client):
    member = new_member(plc)
    await host.ctx.services.members.grant(host.space, member.did)
    aud = f"{host.ctx.settings.service_did}#atproto_space_host"
    attestation = oauth_client.attestation(aud)
    r = await host.exchange(member.headers(host.space), clientAttestation=attestation)
    assert r.status == 200, await r.text()
    again = await host.exchange(member.headers(host.space), clientAttestation=attestation)
    body = await again.json()
    assert (again.status, body["error"]) == (401, "InvalidClientAttestation") and "jti" in body["message"]


@pytest.mark.parametrize("case", ["other key", "other audience", "iss is not sub", "too long-lived"])
async def test_bad_client_attestations_are_refused(host, plc, oauth_client, case):
    member = new_member(plc)
    await host.ctx.services.members.grant(host.space, member.did)
    aud = f"{host.ctx.settings.service_did}#atproto_space_host"
    attestation = {
        "other key": lambda: oauth_client.attestation(aud, key=PrivateKey.generate("ES256")),
        "other audience": lambda: oauth_client.attestation("did:web:elsewhere.example#atproto_space_host"),
        "iss is not sub": lambda: oauth_client.attestation(aud, sub="https://other.example/meta.json"),
        "too long-lived": lambda: oauth_client.attestation(aud, exp=int(time.time()) + 3600),
    }[case]()
    r = await host.exchange(member.headers(host.space), clientAttestation=attestation)
    assert (r.status, (await r.json())["error"]) == (401, "InvalidClientAttestation")
