"""com.atproto.space.getSpaceCredential with members whose DID documents a fake PLC serves on loopback."""

from __future__ import annotations

import time

import numpy as np
from support.member_world import EXCHANGE, MODEL, exchange_headers, new_member, service_auth_token

from engram.auth.credential import CredentialVerifier
from engram.auth.crypto_keys import PrivateKey
from engram.auth.jws import parse_jws
from engram.search.vectors import encode_query_vector
from engram.store import Embedding, MemoryWrite


async def _error(response) -> tuple[int, str, str]:
    body = await response.json()
    return response.status, body["error"], body["message"]


async def test_a_granted_member_gets_a_credential_bound_to_its_key_and_searches(host, plc):
    member = new_member(plc)
    await host.ctx.services.members.grant(host.space, member.did)
    vector = np.ones(MODEL.dims, dtype=np.float16) / 4
    await host.ctx.services.memories.write(host.space, [MemoryWrite(
        author=host.ctx.settings.service_did, text="the release train leaves on thursdays",
        embedding=Embedding(MODEL.model, MODEL.digest, MODEL.dims, vector))])  # fmt: skip

    r = await host.exchange(member.headers(host.space))
    assert r.status == 200, await r.text()
    credential = (await r.json())["credential"]
    claims = parse_jws(credential).payload
    assert claims["iss"] == host.ctx.settings.service_did and claims["sub"] == host.space
    assert claims["cnf"] == {"kid": member.holder.public_key.did_key}
    assert claims["exp"] - claims["iat"] == 600  # the default TTL
    verified = await CredentialVerifier(host.ctx.resolver).verify(credential, host.space)
    assert verified.holder_key == member.holder.public_key

    search = await host.read(
        "garden.engram.searchMemories", credential, member.holder,
        vector=encode_query_vector(vector.astype(np.float32)), model=MODEL.model, modelDigest=MODEL.digest,
    )  # fmt: skip
    assert search.status == 200, await search.text()
    assert [m["text"] for m in (await search.json())["memories"]] == ["the release train leaves on thursdays"]


async def test_the_credential_lifetime_follows_the_setting(host, plc):
    from dataclasses import replace

    host.ctx.settings = replace(host.ctx.settings, credential_ttl=3600)
    member = new_member(plc)
    await host.ctx.services.members.grant(host.space, member.did)
    r = await host.exchange(member.headers(host.space))
    claims = parse_jws((await r.json())["credential"]).payload
    assert claims["exp"] - claims["iat"] == 3600


async def test_a_stranger_is_refused(host, plc):
    stranger = new_member(plc)
    status, error, _ = await _error(await host.exchange(stranger.headers(host.space)))
    assert (status, error) == (403, "UserNotAuthorized")


async def test_revocation_is_honoured_at_the_next_exchange(host, plc):
    member = new_member(plc)
    await host.ctx.services.members.grant(host.space, member.did, write=True)
    assert (await host.exchange(member.headers(host.space))).status == 200
    assert await host.ctx.services.members.revoke(host.space, member.did) is True
    status, error, _ = await _error(await host.exchange(member.headers(host.space)))
    assert (status, error) == (403, "UserNotAuthorized")


async def test_a_delegation_signed_by_another_key_is_refused(host, plc):
    member = new_member(plc)
    await host.ctx.services.members.grant(host.space, member.did)
    from support.member_world import delegation_token

    forged_token = delegation_token(PrivateKey.generate("ES256K"), member.did, host.space)
    forged = exchange_headers(member.holder, forged_token)
    status, error, message = await _error(await host.exchange(forged))
    assert (status, error) == (401, "InvalidDelegationToken") and "BadJwtSignature" in message


async def test_a_delegation_for_another_audience_is_refused(host, plc):
    member = new_member(plc)
    await host.ctx.services.members.grant(host.space, member.did)
    headers = member.headers(host.space, aud="did:web:elsewhere.example#atproto_space_host")
    status, error, message = await _error(await host.exchange(headers))
    assert (status, error) == (401, "InvalidDelegationToken") and "BadJwtAudience" in message


async def test_lxm_must_name_the_exchange(host, plc):
    member = new_member(plc)
    await host.ctx.services.members.grant(host.space, member.did)
    authority = host.ctx.settings.service_did
    wrong = service_auth_token(member, authority, lxm="garden.engram.searchMemories")
    status, error, message = await _error(await host.exchange(exchange_headers(member.holder, wrong)))
    assert (status, error) == (401, "InvalidDelegationToken") and "BadJwtLexiconMethod" in message
    # a delegation token (typ atproto-space-delegation+jwt) must carry no lxm at all
    headers = member.headers(host.space, lxm="com.atproto.space.getSpaceCredential")
    status, error, message = await _error(await host.exchange(headers))
    assert (status, error) == (401, "InvalidDelegationToken") and "BadJwtLexiconMethod" in message
    # the plain service-auth form with the exchange's lxm is accepted
    right = service_auth_token(member, authority)
    assert (await host.exchange(exchange_headers(member.holder, right))).status == 200


async def test_a_replayed_delegation_is_refused(host, plc):
    member = new_member(plc)
    await host.ctx.services.members.grant(host.space, member.did)
    headers = member.headers(host.space)
    assert (await host.exchange(headers)).status == 200
    status, error, message = await _error(await host.exchange(headers))
    assert (status, error) == (401, "InvalidDelegationToken") and "JwtReplayed" in message


async def test_a_holder_signature_by_another_key_is_refused(host, plc):
    member = new_member(plc)
    await host.ctx.services.members.grant(host.space, member.did)
    headers = member.headers(host.space)
    impostor = exchange_headers(PrivateKey.generate("ES256"), member.token(host.space))
    headers["Signature"] = impostor["Signature"]  # keyid still names the member's holder key
    status, error, _ = await _error(await host.exchange(headers))
    assert (status, error) == (401, "BadSpaceSignature")


async def test_a_secp256k1_holder_key_is_refused(host, plc):
    member = new_member(plc)
    await host.ctx.services.members.grant(host.space, member.did)
    token = member.token(host.space)
    headers = exchange_headers(member.holder, token)
    k1 = PrivateKey.generate("ES256K").public_key.did_key
    headers["Signature-Input"] = headers["Signature-Input"].replace(member.holder.public_key.did_key, k1)
    status, error, _ = await _error(await host.exchange(headers))
    assert (status, error) == (401, "BadSpaceSignature")


async def test_expired_and_other_space_delegations_are_refused(host, plc):
    member = new_member(plc)
    await host.ctx.services.members.grant(host.space, member.did)
    now = int(time.time())
    status, error, message = await _error(
        await host.exchange(member.headers(host.space, iat=now - 120, exp=now - 60))
    )
    assert (status, error) == (401, "InvalidDelegationToken") and "JwtExpired" in message
    other = f"at://{host.ctx.settings.service_did}/space/garden.engram.space/other"
    status, error, message = await _error(await host.exchange(member.headers(host.space, sub=other)))
    assert (status, error) == (401, "InvalidDelegationToken") and "another space" in message


async def test_missing_authorization_is_auth_required(host, plc):
    r = await host.exchange({})
    assert (await _error(r))[:2] == (401, "AuthRequired")


async def test_unknown_synced_and_deleted_spaces(host, plc):
    member = new_member(plc)
    unknown = f"at://{host.ctx.settings.service_did}/space/garden.engram.space/nope"
    assert (await _error(await host.exchange(member.headers(unknown), space=unknown)))[:2] == (
        400, "SpaceNotFound")  # fmt: skip
    foreign = "at://did:plc:aaaaaaaaaaaaaaaaaaaaaaaa/space/garden.engram.space/x"
    assert (await _error(await host.exchange(member.headers(foreign), space=foreign)))[:2] == (
        400, "SpaceNotFound")  # fmt: skip
    await host.ctx.services.members.grant(host.space, member.did)
    await host.ctx.services.spaces.delete(host.space)
    assert (await _error(await host.exchange(member.headers(host.space))))[:2] == (400, "SpaceDeleted")


async def test_the_authority_itself_needs_no_grant(host, plc):
    ctx = host.ctx
    authority = ctx.settings.service_did
    key = ctx.keyring.private_key(authority)
    from support.member_world import delegation_token

    holder = PrivateKey.generate("ES256")
    r = await host.exchange(exchange_headers(holder, delegation_token(key, authority, host.space)))
    assert r.status == 200, await r.text()


async def test_a_body_no_one_can_read_is_refused_for_what_it_is_and_claims_nothing(host, plc):
    """The exchange's auth reads the space from the body; a body that is not JSON, or not the lexicon's
    input, gets the validator's own error (not "missing space"), before the delegation token is verified
    or its jti claimed."""
    member = new_member(plc)
    await host.ctx.services.members.grant(host.space, member.did)
    headers = member.headers(host.space)
    claims_before = await host.ctx.store.read(
        lambda c: c.execute("SELECT COUNT(*) FROM replay_claims").fetchone()[0]
    )
    for body, content_type in ((b"{nope", "application/json"), (b'{"space": NaN}', "application/json"),
                               (b"\xff\xfe", "application/json"), (b"space=x", "text/plain"),
                               (b'{"space": "%s", "clientAttestation": 5}' % host.space.encode(), "application/json")):  # fmt: skip
        r = await host.client.post(EXCHANGE, data=body, headers={**headers, "Content-Type": content_type})
        status, error, message = await _error(r)
        assert status == 400 and error == "InvalidRequest", (body, message)
        assert "space" not in message.lower() or "json" in message.lower(), message
    claims_after = await host.ctx.store.read(
        lambda c: c.execute("SELECT COUNT(*) FROM replay_claims").fetchone()[0]
    )
    assert claims_after == claims_before
    assert (await host.exchange(headers)).status == 200  # the same token still works: it was never claimed
