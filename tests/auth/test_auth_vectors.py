"""The reference vectors at the pinned now=1790000000.

tests/vectors/atproto-space-vectors.json is a verbatim copy of ../shared/testdata/atproto-space-vectors.json
(vendored so the suite runs from any checkout; test_vendored_vectors_match_the_shared_copy keeps them equal)."""

import json
from pathlib import Path

import pytest
from multidict import CIMultiDict
from support.fakes.static_resolver import StaticResolver

from engram.auth.credential import CredentialVerifier
from engram.auth.crypto_keys import PublicKey
from engram.auth.jws import parse_jws
from engram.auth.space_signature import verify_exchange_signature, verify_space_signature
from engram.errors import NotAuthenticated

VECTOR_FILE = Path(__file__).resolve().parents[1] / "vectors" / "atproto-space-vectors.json"
SHARED_FILE = Path(__file__).resolve().parents[3] / "shared" / "testdata" / "atproto-space-vectors.json"
VECTORS = json.loads(VECTOR_FILE.read_text())
VENDORED_SHA256 = "decfebbe90f8c5e140fa06f63ae4900a766a7a1ff75021415f381b1f3af8d616"
NOW = VECTORS["now"]
TOKENS = VECTORS["tokens"]
CREDENTIALS = [t for t in TOKENS if t["type"] == "credential"]
USE_CASES = [c for c in VECTORS["httpsig"] if c["credentialKey"]]
EXCHANGE_CASES = [c for c in VECTORS["httpsig"] if not c["credentialKey"]]
B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def test_commit_vectors_cover_both_curves():
    assert {PublicKey.from_did_key(c["didKey"]).alg for c in VECTORS["commits"]} == {"ES256", "ES256K"}


def test_vector_clock_is_the_documented_one():
    assert NOW == 1790000000 and len(CREDENTIALS) == 3 and len(EXCHANGE_CASES) == 1 and len(USE_CASES) == 2


def _verifier_for(token: dict) -> CredentialVerifier:
    header = parse_jws(token["jwt"]).header
    resolver = StaticResolver()
    resolver.add_key(token["opts"]["iss"], PublicKey.from_did_key(token["signingKey"]), (header["kid"],))
    return CredentialVerifier(resolver, now=lambda: NOW)


@pytest.mark.parametrize("token", CREDENTIALS, ids=lambda t: parse_jws(t["jwt"]).header["alg"])
async def test_every_credential_vector_verifies(token):
    cred = await _verifier_for(token).verify(token["jwt"], token["opts"]["sub"])
    assert cred.issuer == token["opts"]["iss"]
    assert cred.holder_key.did_key == token["opts"]["keyId"]
    assert cred.exp - cred.iat == token["opts"].get("expiresInSec", 600)


async def test_delegation_token_is_refused_as_a_credential():
    (token,) = [t for t in TOKENS if t["type"] == "delegation"]
    resolver = StaticResolver()
    resolver.add_key(token["opts"]["iss"], PublicKey.from_did_key(token["signingKey"]))
    with pytest.raises(NotAuthenticated) as e:
        await CredentialVerifier(resolver, now=lambda: NOW).verify(token["jwt"], token["opts"]["sub"])
    assert e.value.name == "InvalidToken" and "typ" in e.value.message


def _one_char_changes(jwt: str):
    """For each of the three parts, the token with one character of that part replaced."""
    start = 0
    for part_index, part in enumerate(jwt.split(".")):
        for offset in (0, len(part) // 2, len(part) - 1):
            i = start + offset
            replacement = B64URL[(B64URL.index(jwt[i]) + 1) % 64]
            yield part_index, jwt[:i] + replacement + jwt[i + 1 :]
        start += len(part) + 1


@pytest.mark.parametrize("token", CREDENTIALS, ids=lambda t: parse_jws(t["jwt"]).header["alg"])
async def test_every_one_character_change_of_a_credential_is_refused(token):
    verifier = _verifier_for(token)
    changed = list(_one_char_changes(token["jwt"]))
    assert len(changed) == 9
    for part_index, bad in changed:
        with pytest.raises(NotAuthenticated) as e:
            await verifier.verify(bad, token["opts"]["sub"])
        assert e.value.name == "InvalidToken", (part_index, bad)


async def test_credential_vectors_refused_outside_their_time_window():
    token = CREDENTIALS[0]
    for now in (NOW + 600 + 5, NOW - 6 - 600):
        resolver = StaticResolver()
        resolver.add_key(token["opts"]["iss"], PublicKey.from_did_key(token["signingKey"]))
        with pytest.raises(NotAuthenticated):
            await CredentialVerifier(resolver, now=lambda n=now: n).verify(token["jwt"], token["opts"]["sub"])


@pytest.mark.parametrize("case", USE_CASES, ids=["audience-did-example", "audience-did-plc"])
def test_every_credential_use_signature_vector_verifies(case):
    verify_space_signature(CIMultiDict(case["headers"]), PublicKey.from_did_key(case["credentialKey"]))


def test_exchange_signature_vector_verifies_and_names_its_key():
    (case,) = EXCHANGE_CASES
    assert verify_exchange_signature(CIMultiDict(case["headers"])).did_key == case["keyDid"]


def _altered_header_sets(headers: dict[str, str]):
    for name, value in headers.items():
        if name == "signature":
            prefix, b64, suffix = value.split(":")
            i = len(b64) // 2
            flipped = b64[:i] + ("A" if b64[i] != "A" else "B") + b64[i + 1 :]
            yield name, {**headers, name: f"{prefix}:{flipped}:{suffix}"}
        elif name == "signature-input":
            yield name, {**headers, name: value.replace('"authorization"', '"authorizatioN"')}
        else:
            yield name, {**headers, name: value[:-1] + ("x" if value[-1] != "x" else "y")}


@pytest.mark.parametrize("case", VECTORS["httpsig"], ids=["use", "exchange", "use-jwt"])
def test_every_one_byte_change_of_a_signature_vector_is_refused(case):
    altered = list(_altered_header_sets(case["headers"]))
    assert len(altered) == len(case["headers"])
    for name, headers in altered:
        with pytest.raises(NotAuthenticated) as e:
            if case["credentialKey"]:
                verify_space_signature(CIMultiDict(headers), PublicKey.from_did_key(case["credentialKey"]))
            else:
                verify_exchange_signature(CIMultiDict(headers))
        assert e.value.name == "BadSpaceSignature", name


@pytest.mark.parametrize("commit", VECTORS["commits"], ids=lambda c: c["ctx"]["rev"])
def test_commit_signatures_verify_strict_low_s(commit):
    key = PublicKey.from_did_key(commit["didKey"])
    assert key.did_key == commit["didKey"]  # decode then re-encode round-trips
    ctx, sig = bytes.fromhex(commit["ctxBytes"]), bytearray(bytes.fromhex(commit["sig"]))
    assert key.verify(ctx, bytes(sig), strict_low_s=True)
    sig[40] ^= 1
    assert not key.verify(ctx, bytes(sig), strict_low_s=True)
    assert not key.verify(ctx + b"x", bytes.fromhex(commit["sig"]), strict_low_s=True)


def test_vendored_vectors_match_the_shared_copy():
    # The vendored file's sha256 when it was copied; the shared copy, where present, must still equal it.
    import hashlib

    digest = hashlib.sha256(VECTOR_FILE.read_bytes()).hexdigest()
    assert digest == VENDORED_SHA256
    if SHARED_FILE.exists():
        assert SHARED_FILE.read_bytes() == VECTOR_FILE.read_bytes()
