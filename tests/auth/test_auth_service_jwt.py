"""Inbound service-auth JWTs (docs/protocol.md#service-auth-jwts)."""

import pytest
from support.fakes.static_resolver import StaticResolver
from support.reader_cases import b64url, forge_jws

from engram.auth.crypto_keys import PrivateKey
from engram.auth.service_jwt import ServiceAuthVerifier, mint_service_jwt
from engram.errors import NotAuthenticated
from engram.xrpc.errors import http_status

ENGRAM = "did:web:engram.example.com"
AUTHORITY = "did:plc:" + "a" * 24
LXM = "com.atproto.space.notifyWrite"
NOW = 1_790_000_000


@pytest.fixture
def setup():
    key = PrivateKey.generate("ES256K")
    resolver = StaticResolver()
    resolver.add_key(AUTHORITY, key.public_key)
    return key, resolver, ServiceAuthVerifier(ENGRAM, resolver, now=lambda: NOW)


def _claims(**overrides):
    claims = {
        "iss": AUTHORITY,
        "aud": f"{ENGRAM}#atproto_space_syncer",
        "lxm": LXM,
        "iat": NOW,
        "exp": NOW + 60,
        "jti": "nonce-1",
    }
    claims.update(overrides)
    return {k: v for k, v in claims.items() if v is not None}


async def _refused(verifier, header, error, lxm=LXM):
    with pytest.raises(NotAuthenticated) as e:
        await verifier.verify(header, lxm)
    assert (http_status(e.value), e.value.name) == (401, error), e.value.message


@pytest.mark.parametrize("aud", [ENGRAM, f"{ENGRAM}#atproto_space_syncer", f"{ENGRAM}#engram"])
async def test_valid_tokens_for_each_accepted_audience(setup, aud):
    key, _, verifier = setup
    token = mint_service_jwt(key, iss=AUTHORITY, aud=aud, lxm=LXM, now=lambda: NOW)
    auth = await verifier.verify(f"Bearer {token}", LXM)
    assert (auth.iss, auth.aud, auth.exp) == (AUTHORITY, aud, NOW + 60)


async def test_p256_issuer_high_s_and_iss_fragment_are_accepted(setup):
    _, resolver, verifier = setup
    p256 = PrivateKey.generate("ES256")
    resolver.add_key("did:plc:" + "b" * 24, p256.public_key)
    token = forge_jws(
        p256,
        {"typ": "JWT", "alg": "ES256"},
        _claims(iss="did:plc:" + "b" * 24 + "#atproto_pds"),
        make_high_s=True,
    )
    assert (await verifier.verify(f"Bearer {token}", LXM)).iss == "did:plc:" + "b" * 24


async def test_missing_or_non_bearer_header_is_auth_required(setup):
    key, _, verifier = setup
    token = mint_service_jwt(key, iss=AUTHORITY, aud=ENGRAM, lxm=LXM, now=lambda: NOW)
    for header in (None, "", "Bearer ", f"Atproto-Space {token}", token):
        await _refused(verifier, header, "AuthRequired")


async def test_wrong_audience(setup):
    key, _, verifier = setup
    for aud in ("did:web:other.example", f"{ENGRAM}#atproto_pds", None, [ENGRAM], {"a": 1}):
        await _refused(
            verifier, f"Bearer {forge_jws(key, {'alg': 'ES256K'}, _claims(aud=aud))}", "BadJwtAudience"
        )


async def test_wrong_or_missing_lxm(setup):
    key, _, verifier = setup
    await _refused(
        verifier,
        f"Bearer {forge_jws(key, {'alg': 'ES256K'}, _claims(lxm='com.example.other'))}",
        "BadJwtLexiconMethod",
    )
    await _refused(
        verifier, f"Bearer {forge_jws(key, {'alg': 'ES256K'}, _claims(lxm=None))}", "BadJwtLexiconMethod"
    )


async def test_replayed_jti(setup):
    key, _, verifier = setup
    token = forge_jws(key, {"alg": "ES256K"}, _claims(jti="once"))
    await verifier.verify(f"Bearer {token}", LXM)
    await _refused(verifier, f"Bearer {token}", "JwtReplayed")
    fresh = forge_jws(key, {"alg": "ES256K"}, _claims(jti="twice"))
    assert (await verifier.verify(f"Bearer {fresh}", LXM)).jti == "twice"


async def test_forged_token_does_not_burn_the_jti(setup):
    key, _, verifier = setup
    forged = forge_jws(PrivateKey.generate("ES256K"), {"alg": "ES256K"}, _claims(jti="shared"))
    await _refused(verifier, f"Bearer {forged}", "BadJwtSignature")
    await verifier.verify(f"Bearer {forge_jws(key, {'alg': 'ES256K'}, _claims(jti='shared'))}", LXM)


async def test_exp_missing_expired_or_too_far(setup):
    key, _, verifier = setup
    await _refused(verifier, f"Bearer {forge_jws(key, {'alg': 'ES256K'}, _claims(exp=None))}", "BadJwt")
    await _refused(
        verifier, f"Bearer {forge_jws(key, {'alg': 'ES256K'}, _claims(exp=NOW - 5))}", "JwtExpired"
    )
    await _refused(verifier, f"Bearer {forge_jws(key, {'alg': 'ES256K'}, _claims(exp=NOW + 7200))}", "BadJwt")
    await _refused(verifier, f"Bearer {forge_jws(key, {'alg': 'ES256K'}, _claims(iat=NOW + 30))}", "BadJwt")


@pytest.mark.parametrize("typ", ["at+jwt", "refresh+jwt", "dpop+jwt", "AT+JWT", ["JWT"]])
async def test_bad_typ(setup, typ):
    key, _, verifier = setup
    await _refused(verifier, f"Bearer {forge_jws(key, {'alg': 'ES256K', 'typ': typ}, _claims())}", "BadJwt")


async def test_malformed_tokens_and_headers(setup):
    key, _, verifier = setup
    await _refused(verifier, "Bearer abc.def", "BadJwt")
    await _refused(verifier, f"Bearer {forge_jws(key, {'alg': 'none'}, _claims())}", "BadJwt")
    await _refused(
        verifier, f"Bearer {forge_jws(key, {'alg': 'ES256K', 'kid': '#other'}, _claims())}", "BadJwt"
    )
    await _refused(verifier, f"Bearer {forge_jws(key, {'alg': 'ES256K'}, _claims(iss='alice'))}", "BadJwt")
    await _refused(verifier, f"Bearer {forge_jws(key, {'alg': 'ES256K'}, _claims(jti=None))}", "BadJwt")


async def test_bad_signature_retries_once_with_a_fresh_document(setup):
    key, resolver, verifier = setup
    token = forge_jws(key, {"alg": "ES256K"}, _claims())
    head, body, _sig = token.split(".")
    tampered = f"{head}.{body}.{b64url(bytes(64))}"
    await _refused(verifier, f"Bearer {tampered}", "BadJwtSignature")
    assert resolver.calls[(AUTHORITY, True)] == 1
    await _refused(verifier, f"Bearer {forge_jws(key, {'alg': 'ES256'}, _claims())}", "BadJwtSignature")
    unknown = forge_jws(key, {"alg": "ES256K"}, _claims(iss="did:plc:" + "z" * 24))
    await _refused(verifier, f"Bearer {unknown}", "BadJwtSignature")
