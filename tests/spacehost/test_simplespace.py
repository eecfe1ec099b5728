"""An authority manages its engram-hosted spaces the standard way (docs/space-host.md#managing-members): the
calls its tools make at the space host (com.atproto.simplespace.createSpace, putMember, removeMember,
listMembers and com.atproto.space.listSpaces), over HTTP, with the service-auth JWT its PDS mints when it
proxies them (`atproto-proxy`), signed by test keys and resolved from a fake PLC directory."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from support.fakes.did_server import random_plc_did

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.crypto_keys import PrivateKey
from engram.auth.identity import save_operator_key
from engram.auth.service_jwt import mint_service_jwt

DEFS = "com.atproto.simplespace.defs"
MEMBER_LIST = {"$type": f"{DEFS}#memberListPolicy"}
OPEN = {"$type": f"{DEFS}#open"}


@dataclass
class World:
    client: object
    ctx: object
    plc: object
    authority: str
    authority_key: PrivateKey
    member: str
    member_key: PrivateKey

    def token(
        self, nsid: str, *, iss: str | None = None, key: PrivateKey | None = None, aud: str | None = None
    ):
        iss = iss or self.authority
        key = key or (self.authority_key if iss == self.authority else self.member_key)
        aud = aud or f"{self.ctx.settings.service_did}#atproto_space_host"
        return {"Authorization": "Bearer " + mint_service_jwt(key, iss=iss, aud=aud, lxm=nsid)}

    async def call(self, nsid: str, body: dict | None = None, *, headers: dict | None = None, **params):
        headers = headers if headers is not None else self.token(nsid)
        if body is None:
            r = await self.client.get(f"/xrpc/{nsid}", params=params, headers=headers)
        else:
            r = await self.client.post(f"/xrpc/{nsid}", json=body, headers=headers)
        return r.status, (await r.json() if r.content_type == "application/json" else None)


@pytest.fixture
async def world(aiohttp_client, host_settings, plc):
    """engram holding the key of an operator did:plc (the authority); a member with its own did:plc."""
    authority, authority_key = random_plc_did(), PrivateKey.generate("ES256K")
    save_operator_key(host_settings.data_dir, authority, authority_key)
    plc.register(authority, authority_key.public_key)
    member, member_key = random_plc_did(), PrivateKey.generate("ES256")
    plc.register(member, member_key.public_key)
    client = await aiohttp_client(await create_app(host_settings))
    return World(client, client.app[context_key], plc, authority, authority_key, member, member_key)


CREATE = "com.atproto.simplespace.createSpace"
PUT = "com.atproto.simplespace.putMember"
REMOVE = "com.atproto.simplespace.removeMember"
LIST = "com.atproto.simplespace.listMembers"
SPACES = "com.atproto.space.listSpaces"


async def test_the_authority_creates_a_space_and_manages_its_members(world):
    body = {"spaceType": "garden.engram.space", "skey": "field-notes", "readPolicy": MEMBER_LIST,
            "writePolicy": MEMBER_LIST, "appAccess": OPEN}  # fmt: skip
    status, out = await world.call(CREATE, body)
    assert status == 200, out
    space = out["uri"]
    assert space == f"at://{world.authority}/space/garden.engram.space/field-notes"
    created = await world.ctx.services.spaces.find(space)
    assert created.kind == "hosted" and created.authority == world.authority and created.config is not None

    # The August alpha's spelling (type, policy), and no skey: a TID.
    status, out = await world.call(CREATE, {"type": "garden.engram.space", "policy": MEMBER_LIST})
    assert status == 200, out
    assert out["uri"].startswith(f"at://{world.authority}/space/garden.engram.space/")

    others = [random_plc_did() for _ in range(3)]
    for did, read, write in [(world.member, True, True), *[(d, True, False) for d in others]]:
        status, out = await world.call(PUT, {"space": space, "did": did, "read": read, "write": write})
        assert status == 200, out
    grant = await world.ctx.services.members.get(space, world.member)
    assert grant.read and grant.write

    listed, cursor = [], None
    while True:
        params = {"space": space, "limit": "2", **({"cursor": cursor} if cursor else {})}
        status, out = await world.call(LIST, headers=world.token(LIST), **params)
        assert status == 200, out
        listed += out["members"]
        if "cursor" not in out:
            break
        cursor = out["cursor"]
    expected = sorted([(world.member, True, True), *[(d, True, False) for d in others]])
    assert [(m["did"], m["read"], m["write"]) for m in listed] == expected

    # Both flags false is no access: the member is gone, as after removeMember.
    status, _ = await world.call(PUT, {"space": space, "did": others[0], "read": False, "write": False})
    assert status == 200 and await world.ctx.services.members.get(space, others[0]) is None
    status, _ = await world.call(REMOVE, {"space": space, "did": others[1]})
    assert status == 200 and await world.ctx.services.members.get(space, others[1]) is None

    # listSpaces: the authority owns both; the member sees the one it belongs to, not as owner.
    status, out = await world.call(SPACES, headers=world.token(SPACES))
    assert status == 200, out
    assert len(out["spaces"]) == 2 and all(s["isOwner"] for s in out["spaces"])
    status, out = await world.call(SPACES, headers=world.token(SPACES, iss=world.member))
    assert status == 200, out
    assert out["spaces"] == [{"uri": space, "isOwner": False}]
    status, out = await world.call(SPACES, headers=world.token(SPACES), did=world.member)
    assert status == 200 and out["spaces"] == []


async def test_the_references_errors_and_nothing_written(world):
    ctx = world.ctx
    space = (await ctx.services.spaces.create_hosted("kept", authority=world.authority)).uri
    good = {"space": space, "did": world.member, "read": True, "write": False}

    async def refused(nsid, body, headers, status, error):
        got, out = await world.call(nsid, body, headers=headers)
        assert (got, out and out["error"]) == (status, error), out
        assert await ctx.services.members.get(space, world.member) is None  # an error answer wrote nothing

    # Not the owner: refused from the claimed issuer, before the member's DID is ever resolved.
    before = sum(world.plc.requests.values())
    await refused(PUT, good, world.token(PUT, iss=world.member), 400, "NotSpaceOwner")
    assert sum(world.plc.requests.values()) == before
    # The space is not here.
    await refused(PUT, {**good, "space": space + "-nope"}, world.token(PUT), 400, "SpaceNotFound")
    # The token: bound to another method, addressed elsewhere, signed by another key, or missing.
    await refused(PUT, good, world.token(REMOVE), 401, "BadJwtLexiconMethod")
    await refused(PUT, good, world.token(PUT, aud="did:web:elsewhere.example"), 401, "BadJwtAudience")
    await refused(PUT, good, world.token(PUT, key=PrivateKey.generate("ES256K")), 401, "BadJwtSignature")
    await refused(PUT, good, {}, 401, "AuthRequired")
    # A replayed token is refused the second time.
    headers = world.token(PUT)
    assert (await world.call(PUT, good, headers=headers))[0] == 200
    assert (await ctx.services.members.revoke(space, world.member)) is True
    await refused(PUT, good, headers, 401, "JwtReplayed")

    # createSpace: only what engram implements, only for a DID whose key engram holds.
    def create(**body):
        return {"spaceType": "garden.engram.space", "skey": "new", **body}

    for body, error in [
        (create(readPolicy={"$type": f"{DEFS}#publicPolicy"}), "UnsupportedPolicy"),
        (create(writePolicy={"$type": f"{DEFS}#managingAppPolicy", "managingApp": "did:web:x#y"}),
         "UnsupportedPolicy"),
        (create(appAccess={"$type": f"{DEFS}#allowList", "allowed": ["https://app.example/c.json"]}),
         "UnsupportedAppAccess"),
        (create(spaceType="app.bsky.group"), "InvalidType"),
        ({"spaceType": "garden.engram.space", "skey": "kept"}, "SpaceAlreadyExists"),
    ]:  # fmt: skip
        status, out = await world.call(CREATE, body)
        assert (status, out["error"]) == (400, error), out
    assert await ctx.services.spaces.find(f"at://{world.authority}/space/garden.engram.space/new") is None
    before = sum(world.plc.requests.values())
    status, out = await world.call(CREATE, create(), headers=world.token(CREATE, iss=world.member))
    assert (status, out["error"]) == (400, "UnsupportedAuthority")
    # listSpaces by a DID that owns nothing here and belongs nowhere: refused, nothing fetched.
    stranger = random_plc_did()
    status, out = await world.call(SPACES, headers=world.token(SPACES, iss=stranger, key=world.member_key))
    assert (status, out["error"]) == (403, "Forbidden")
    assert sum(world.plc.requests.values()) == before


ADD = "com.atproto.simplespace.addMember"
GET = "com.atproto.simplespace.getSpace"
UPDATE = "com.atproto.simplespace.updateSpace"
DELETE = "com.atproto.simplespace.deleteSpace"


async def test_add_member_update_get_and_delete_space(world):
    ctx = world.ctx
    space = (await ctx.services.spaces.create_hosted("managed", authority=world.authority)).uri

    # addMember (the August alpha): read and write, as putMember with both flags.
    status, out = await world.call(ADD, {"space": space, "did": world.member})
    assert status == 200, out
    grant = await ctx.services.members.get(space, world.member)
    assert (grant.read, grant.write) == (True, True)
    status, out = await world.call(
        ADD, {"space": space, "did": random_plc_did()}, headers=world.token(ADD, iss=world.member)
    )
    assert (status, out["error"]) == (400, "NotSpaceOwner")

    # updateSpace: the configuration engram has is accepted in either alpha's spelling; any other is refused.
    for body in ({}, {"readPolicy": MEMBER_LIST, "writePolicy": MEMBER_LIST, "appAccess": OPEN},
                 {"mintPolicy": "member-list", "appAccessMode": "allow", "appExceptions": [], "managingApp": ""}):  # fmt: skip
        status, out = await world.call(UPDATE, {"space": space, **body})
        assert status == 200, (body, out)
    for body, error in [
        ({"mintPolicy": "public"}, "UnsupportedPolicy"),
        ({"managingApp": "did:web:app.example#manager"}, "UnsupportedPolicy"),
        ({"readPolicy": {"$type": f"{DEFS}#publicPolicy"}}, "UnsupportedPolicy"),
        ({"appAccessMode": "deny"}, "UnsupportedAppAccess"),
        ({"appExceptions": ["https://app.example/client-metadata.json"]}, "UnsupportedAppAccess"),
        ({"appAccess": {"$type": f"{DEFS}#allowList", "allowed": []}}, "UnsupportedAppAccess"),
    ]:
        status, out = await world.call(UPDATE, {"space": space, **body})
        assert (status, out["error"]) == (400, error), body

    # getSpace: a member with a space credential, addressed to the authority.
    from engram.auth.credential import mint_space_credential
    from engram.auth.space_signature import sign_space_request

    holder = PrivateKey.generate("ES256")
    cred = mint_space_credential(world.authority_key, issuer=world.authority, space=space,
                                 holder_did_key=holder.public_key.did_key)  # fmt: skip
    r = await world.client.get(f"/xrpc/{GET}", params={"space": space},
                               headers=sign_space_request(holder, cred, world.authority))  # fmt: skip
    assert r.status == 200, await r.text()
    assert await r.json() == {"uri": space, "policy": MEMBER_LIST, "readPolicy": MEMBER_LIST,
                              "writePolicy": MEMBER_LIST, "appAccess": OPEN}  # fmt: skip
    r = await world.client.get(f"/xrpc/{GET}", params={"space": space})
    assert r.status == 401

    # deleteSpace: only the authority; then the space is gone for every call.
    status, out = await world.call(DELETE, {"space": space}, headers=world.token(DELETE, iss=world.member))
    assert (status, out["error"]) == (400, "NotSpaceOwner")
    assert not (await ctx.services.spaces.find(space)).deleted
    status, out = await world.call(DELETE, {"space": space})
    assert status == 200, out
    assert (await ctx.services.spaces.find(space)).deleted
    status, out = await world.call(ADD, {"space": space, "did": world.member})
    assert (status, out["error"]) == (400, "SpaceDeleted")
    r = await world.client.get(f"/xrpc/{GET}", params={"space": space},
                               headers=sign_space_request(holder, cred, world.authority))  # fmt: skip
    assert (r.status, (await r.json())["error"]) == (400, "SpaceDeleted")
