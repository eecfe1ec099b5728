"""DID resolution against a fake PLC directory / did:web host on 127.0.0.1."""

import asyncio

import libipld
import pytest
from support.fakes.did_server import random_plc_did

from engram.auth.credential import CredentialVerifier, mint_space_credential
from engram.auth.crypto_keys import PrivateKey
from engram.auth.did_document import DidDocument
from engram.auth.did_resolver import DidNotFoundError, DidResolutionError, DidResolver
from engram.auth.keyring import LocalKeyring
from engram.errors import NotAuthenticated


class Clock:
    def __init__(self, t: float = 1_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def resolver(did_server, http_session, clock):
    return DidResolver(http_session, plc_url=did_server.url, dev=True, now=clock)


async def test_resolves_did_plc_through_the_directory_and_caches_it(did_server, resolver):
    did, key = random_plc_did(), PrivateKey.generate("ES256K").public_key
    did_server.register(did, key)
    doc = await resolver.resolve(did)
    assert doc.id == did and doc.key("#atproto") == key
    assert await resolver.resolve(did) is doc
    assert did_server.requests[did] == 1


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_resolves_did_web_with_a_percent_encoded_port(did_server, resolver, host):
    did, key = did_server.web_did(host), PrivateKey.generate("ES256").public_key
    assert "%3A" in did
    did_server.register(did, key)
    assert (await resolver.resolve(did)).key("#atproto") == key
    assert did_server.requests[did] == 1


def test_did_web_uses_https_unless_dev_and_localhost(http_session):
    prod = DidResolver(http_session)
    dev = DidResolver(http_session, dev=True)
    for internal in (
        "did:web:localhost%3A8080",
        "did:web:127.0.0.1",
        "did:web:10.0.0.7",
        "did:web:169.254.169.254",
    ):
        with pytest.raises(DidResolutionError, match="internal"):
            prod.document_url(internal)
    assert dev.document_url("did:web:localhost%3A8080") == "http://localhost:8080/.well-known/did.json"
    assert dev.document_url("did:web:example.com") == "https://example.com/.well-known/did.json"
    assert prod.document_url("did:plc:" + "a" * 24) == "https://plc.directory/did:plc:" + "a" * 24


@pytest.mark.parametrize(
    "did",
    [
        "did:web:example.com:users:alice",
        "did:example:abc",
        "did:plc:TOOSHORT",
        "did:web:exa%2Fmple.com",
        "did:key:zQ3shgAsMzn37G5McCE3NenQGidUhrBRKFTWegp9uXuYUdXdP",
    ],
)
async def test_unsupported_or_malformed_dids_are_errors_without_network(resolver, did):
    with pytest.raises(DidResolutionError):
        await resolver.resolve(did)


async def test_not_found_is_clean_and_negatively_cached(did_server, resolver, clock):
    did = random_plc_did()
    for _ in range(3):
        with pytest.raises(DidNotFoundError):
            await resolver.resolve(did)
    assert did_server.requests[did] == 1
    did_server.register(did, PrivateKey.generate("ES256").public_key)
    clock.t += 61  # not_found_ttl
    assert (await resolver.resolve(did)).id == did
    assert did_server.requests[did] == 2


async def test_server_errors_and_bad_documents_are_resolution_errors(did_server, resolver, clock):
    broken, wrong_id, huge = random_plc_did(), random_plc_did(), random_plc_did()
    did_server.register(broken, PrivateKey.generate("ES256").public_key)
    did_server.status_override[broken] = 500
    did_server.register_raw(wrong_id, {"id": random_plc_did(), "verificationMethod": []})
    did_server.register_raw(huge, {"id": huge, "alsoKnownAs": ["x" * 70_000]})
    for did in (broken, wrong_id, huge):
        with pytest.raises(DidResolutionError) as e:
            await resolver.resolve(did)
        assert not isinstance(e.value, DidNotFoundError)
    with pytest.raises(DidResolutionError):
        await resolver.resolve(broken)
    assert did_server.requests[broken] == 1  # the failure is cached briefly
    del did_server.status_override[broken]
    clock.t += 6
    assert (await resolver.resolve(broken)).id == broken


async def test_concurrent_resolutions_share_one_fetch(did_server, resolver):
    did = random_plc_did()
    did_server.register(did, PrivateKey.generate("ES256").public_key)
    docs = await asyncio.gather(*(resolver.resolve(did) for _ in range(10)))
    assert all(d is docs[0] for d in docs) and did_server.requests[did] == 1


async def test_forced_refresh_is_rate_limited_per_did(did_server, resolver, clock):
    did, old, new = random_plc_did(), PrivateKey.generate("ES256K"), PrivateKey.generate("ES256K")
    did_server.register(did, old.public_key)
    assert (await resolver.resolve(did)).key("#atproto") == old.public_key
    did_server.rotate(did, new.public_key)
    assert (await resolver.resolve(did)).key("#atproto") == old.public_key  # cached
    assert (await resolver.resolve(did, force_refresh=True)).key("#atproto") == new.public_key
    await resolver.resolve(did, force_refresh=True)
    assert did_server.requests[did] == 2
    clock.t += 31
    await resolver.resolve(did, force_refresh=True)
    assert did_server.requests[did] == 3


async def test_rotated_authority_key_old_credential_fails_new_one_verifies(did_server, resolver, clock):
    authority, old, new = random_plc_did(), PrivateKey.generate("ES256K"), PrivateKey.generate("ES256K")
    space = f"at://{authority}/space/garden.engram.space/main"
    holder = PrivateKey.generate("ES256").public_key.did_key
    did_server.register(authority, old.public_key)
    verifier = CredentialVerifier(resolver, now=clock)
    old_cred = mint_space_credential(old, issuer=authority, space=space, holder_did_key=holder, now=clock)
    await verifier.verify(old_cred, space)
    did_server.rotate(authority, new.public_key)
    new_cred = mint_space_credential(new, issuer=authority, space=space, holder_did_key=holder, now=clock)
    await verifier.verify(new_cred, space)  # fails on the cached doc, one forced refresh picks the new key
    assert did_server.requests[authority] == 2
    stale = mint_space_credential(old, issuer=authority, space=space, holder_did_key=holder, now=clock)
    with pytest.raises(NotAuthenticated) as e:
        await verifier.verify(stale, space)
    assert e.value.name == "InvalidToken"


async def test_forged_tokens_trigger_at_most_one_refresh(did_server, resolver, clock):
    authority, real, forger = random_plc_did(), PrivateKey.generate("ES256K"), PrivateKey.generate("ES256K")
    space = f"at://{authority}/space/garden.engram.space/main"
    holder = PrivateKey.generate("ES256").public_key.did_key
    did_server.register(authority, real.public_key)
    verifier = CredentialVerifier(resolver, now=clock)
    for _ in range(20):
        forged = mint_space_credential(
            forger, issuer=authority, space=space, holder_did_key=holder, now=clock
        )
        with pytest.raises(NotAuthenticated):
            await verifier.verify(forged, space)
    assert did_server.requests[authority] == 2  # the first fetch + one forced refresh


async def test_keyring_dids_resolve_without_network(did_server, http_session):
    keyring = LocalKeyring()
    did, key = random_plc_did(), PrivateKey.generate("ES256")
    keyring.add(did, key)
    resolver = DidResolver(http_session, plc_url=did_server.url, keyring=keyring)
    doc = await resolver.resolve(did, force_refresh=True)
    assert doc.key("#atproto") == key.public_key and doc.key("#atproto_space") is None
    assert did_server.requests[did] == 0


async def test_document_parsing_accepts_relative_ids_and_legacy_key_types(did_server, resolver):
    did, k256, p256 = random_plc_did(), PrivateKey.generate("ES256K"), PrivateKey.generate("ES256")
    legacy = libipld.encode_multibase("z", k256.public_key.compressed)
    did_server.register_raw(
        did,
        {
            "id": did,
            "verificationMethod": [
                {"id": "#atproto", "type": "EcdsaSecp256k1VerificationKey2019", "publicKeyMultibase": legacy},
                {
                    "id": f"{did}#atproto_space",
                    "type": "Multikey",
                    "publicKeyMultibase": p256.public_key.multibase,
                },
                {
                    "id": "did:plc:someoneelse#other",
                    "type": "Multikey",
                    "publicKeyMultibase": p256.public_key.multibase,
                },
                {"id": "#broken", "type": "Multikey", "publicKeyMultibase": "znotakey"},
                {"id": "#odd", "type": ["Multikey"], "publicKeyMultibase": p256.public_key.multibase},
                {"id": ["#atproto"], "type": "Multikey", "publicKeyMultibase": p256.public_key.multibase},
                "not an object",
            ],
            "service": [
                {
                    "id": "#atproto_pds",
                    "type": "AtprotoPersonalDataServer",
                    "serviceEndpoint": "https://pds.example",
                },
                {
                    "id": f"{did}#atproto_space_host",
                    "type": "AtprotoSpaceHost",
                    "serviceEndpoint": "https://sh.example",
                },
            ],
        },
    )
    doc = await resolver.resolve(did)
    assert doc.key("#atproto") == k256.public_key and doc.key("#atproto_space") == p256.public_key
    assert doc.key("#other") is None and doc.key("#broken") is None and doc.key("#odd") is None
    assert doc.service("#atproto_pds").endpoint == "https://pds.example"
    assert doc.service("#atproto_space_host").type == "AtprotoSpaceHost"
    assert doc.service("#atproto_space_syncer") is None


def test_built_documents_round_trip_through_json():
    did, key = random_plc_did(), PrivateKey.generate("ES256").public_key
    doc = DidDocument.build(did, {"#atproto": key})
    assert DidDocument.parse(did, doc.to_json()).key("#atproto") == key


async def test_documents_spanning_several_network_chunks_are_read_whole(did_server, resolver):
    did, key = random_plc_did(), PrivateKey.generate("ES256").public_key
    doc = DidDocument.build(did, {"#atproto": key}).to_json()
    doc["alsoKnownAs"] = ["at://" + "h" * 50_000]
    did_server.register_raw(did, doc)
    resolved = await resolver.resolve(did)
    assert resolved.key("#atproto") == key and len(resolved.also_known_as[0]) == 50_005
