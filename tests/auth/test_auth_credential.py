"""Credential minting, caching and the strict JWS decoding under it."""

import pytest
from multidict import CIMultiDict
from support.fakes.static_resolver import StaticResolver

from engram.auth.credential import CredentialVerifier, mint_space_credential
from engram.auth.crypto_keys import CURVE_ORDER, PrivateKey
from engram.auth.jws import JwsError, b64url_decode, parse_jws
from engram.auth.keyring import LocalKeyring
from engram.auth.reader import ReaderVerifier
from engram.auth.space_signature import sign_space_exchange, sign_space_request, verify_exchange_signature
from engram.errors import NotAuthenticated

AUTHORITY = "did:plc:" + "c" * 24
SPACE = f"at://{AUTHORITY}/space/garden.engram.space/notes"
ENGRAM = "did:web:engram.example.com"


class Clock:
    t = 1_790_000_000.0

    def __call__(self):
        return self.t


@pytest.fixture
def world():
    key, holder, clock = PrivateKey.generate("ES256K"), PrivateKey.generate("ES256"), Clock()
    resolver = StaticResolver()
    resolver.add_key(AUTHORITY, key.public_key)
    return key, holder, clock, resolver


@pytest.mark.parametrize("alg", ["ES256", "ES256K"])
def test_minted_credentials_have_the_documented_shape(alg):
    key, holder = PrivateKey.generate(alg), PrivateKey.generate("ES256")
    token = mint_space_credential(
        key,
        issuer=AUTHORITY,
        space=SPACE,
        holder_did_key=holder.public_key.did_key,
        ttl=3600,
        kid="#atproto_space",
        now=lambda: 100,
    )
    jws = parse_jws(token)
    assert jws.header == {"typ": "atproto-space-credential+jwt", "kid": "#atproto_space", "alg": alg}
    assert jws.payload["cnf"] == {"kid": holder.public_key.did_key} and len(jws.payload["jti"]) == 32
    assert (jws.payload["iat"], jws.payload["exp"], jws.payload["sub"]) == (100, 3700, SPACE)
    assert int.from_bytes(jws.signature[32:], "big") <= CURVE_ORDER[alg] // 2


def test_minting_refuses_bad_arguments():
    key, holder = PrivateKey.generate("ES256K"), PrivateKey.generate("ES256").public_key.did_key
    for kwargs in (
        {"ttl": 3601},
        {"ttl": 0},
        {"kid": "#other"},
        {"issuer": "did:plc:" + "d" * 24},
        {"holder_did_key": PrivateKey.generate("ES256K").public_key.did_key},
    ):
        args = {"issuer": AUTHORITY, "space": SPACE, "holder_did_key": holder, **kwargs}
        with pytest.raises(ValueError):
            mint_space_credential(key, **args)


async def test_verified_credentials_are_cached_until_exp(world):
    key, holder, clock, resolver = world
    verifier = CredentialVerifier(resolver, now=clock)
    token = mint_space_credential(
        key, issuer=AUTHORITY, space=SPACE, holder_did_key=holder.public_key.did_key, now=clock
    )
    for _ in range(5):
        assert (await verifier.verify(token, SPACE)).issuer == AUTHORITY
    assert resolver.calls[(AUTHORITY, False)] == 1
    with pytest.raises(NotAuthenticated):  # the cache is per JWT, not per space
        await verifier.verify(token, SPACE + "2")
    clock.t += 600 + 5
    with pytest.raises(NotAuthenticated, match="expired"):
        await verifier.verify(token, SPACE)


async def test_hosted_space_credentials_verify_offline_from_the_keyring():
    keyring, key = LocalKeyring(), PrivateKey.generate("ES256")
    keyring.add(AUTHORITY, key)
    holder = PrivateKey.generate("ES256")
    token = mint_space_credential(
        key, issuer=AUTHORITY, space=SPACE, holder_did_key=holder.public_key.did_key
    )

    class KeyringOnly:
        async def resolve(self, did, force_refresh=False):
            return keyring.document(did)

    auth = await ReaderVerifier(ENGRAM, KeyringOnly()).verify(
        CIMultiDict(sign_space_request(holder, token, ENGRAM)), SPACE
    )
    assert auth.issuer == AUTHORITY and auth.holder_key == holder.public_key


@pytest.mark.parametrize("with_params", [True, False])
async def test_engram_signer_round_trips_through_the_reader(world, with_params):
    key, holder, clock, resolver = world
    token = mint_space_credential(
        key, issuer=AUTHORITY, space=SPACE, holder_did_key=holder.public_key.did_key, now=clock
    )
    headers = sign_space_request(holder, token, ENGRAM, with_params=with_params)
    assert ("keyid=" in headers["Signature-Input"]) is with_params
    auth = await ReaderVerifier(ENGRAM, resolver, now=clock).verify(CIMultiDict(headers), SPACE)
    assert auth.jti == parse_jws(token).payload["jti"] and auth.exp == int(clock.t) + 600


def test_exchange_signer_round_trips_and_binds_its_key():
    holder = PrivateKey.generate("ES256")
    headers = sign_space_exchange(holder, "Bearer delegation-token")
    assert verify_exchange_signature(CIMultiDict(headers)) == holder.public_key
    headers["Signature-Input"] = 'atproto-space=("authorization")'
    with pytest.raises(NotAuthenticated):
        verify_exchange_signature(CIMultiDict(headers))


@pytest.mark.parametrize("text", ["YQ=", "YQ==", "YR", "Y", "Y+8", "Y/8", "YQ\n", "Y Q"])
def test_base64url_is_strict(text):
    with pytest.raises(JwsError):
        b64url_decode(text)


def test_base64url_accepts_canonical_text():
    assert b64url_decode("YQ") == b"a" and b64url_decode("-_8") == b"\xfb\xff"


@pytest.mark.parametrize(
    "token",
    [
        "",
        "a.b",
        "a.b.c.d",
        "e30.e30",
        "W10.e30.",
        "e30.W10.",
        "bnVsbA.e30.",
        "e30.e30." + "A" * 9000,
        "é.e30.",
    ],
)
def test_malformed_compact_jws(token):
    with pytest.raises(JwsError):
        parse_jws(token)
