"""The reader's verified-signature cache (engram/auth/reader.py): keyed on the exact header bytes, bounded by
the credential's exp, and never a way around the credential's window."""

import pytest
from multidict import CIMultiDict
from support.fakes.static_resolver import StaticResolver

import engram.auth.reader as reader_module
from engram.auth.credential import CLOCK_SKEW, mint_space_credential
from engram.auth.crypto_keys import PrivateKey
from engram.auth.reader import ReaderVerifier
from engram.auth.space_signature import sign_space_request
from engram.errors import NotAuthenticated

AUTHORITY = "did:plc:" + "d" * 24
SPACE = f"at://{AUTHORITY}/space/garden.engram.space/notes"
ENGRAM = "did:web:engram.example.com"


class Clock:
    t = 1_790_000_000.0

    def __call__(self):
        return self.t


@pytest.fixture
def signed(monkeypatch):
    """A verifier, signed headers for it, the clock, and a count of real signature verifications."""
    key, holder, clock = PrivateKey.generate("ES256"), PrivateKey.generate("ES256"), Clock()
    resolver = StaticResolver()
    resolver.add_key(AUTHORITY, key.public_key)
    token = mint_space_credential(
        key, issuer=AUTHORITY, space=SPACE, holder_did_key=holder.public_key.did_key, ttl=600, now=clock
    )
    verifications = []
    real_verify = reader_module.verify_space_signature

    def counting_verify(headers, holder_key):
        verifications.append(headers["Signature"])
        return real_verify(headers, holder_key)

    monkeypatch.setattr(reader_module, "verify_space_signature", counting_verify)
    verifier = ReaderVerifier(ENGRAM, resolver, now=clock)
    return verifier, sign_space_request(holder, token, ENGRAM), clock, verifications


def _flip_one_signature_byte(headers: dict[str, str]) -> dict[str, str]:
    label, _, rest = headers["Signature"].partition("=:")
    b64 = rest.rstrip(":")
    middle = len(b64) // 2
    swapped = "A" if b64[middle] != "A" else "B"
    return {**headers, "Signature": f"{label}=:{b64[:middle]}{swapped}{b64[middle + 1 :]}:"}


async def test_identical_header_bytes_verify_once(signed):
    verifier, headers, _clock, verifications = signed
    for _ in range(3):
        auth = await verifier.verify(CIMultiDict(headers), SPACE)
        assert auth.space == SPACE
    assert len(verifications) == 1


async def test_a_changed_signature_byte_misses_the_cache_and_is_refused(signed):
    verifier, headers, _clock, verifications = signed
    await verifier.verify(CIMultiDict(headers), SPACE)
    with pytest.raises(NotAuthenticated) as refused:
        await verifier.verify(CIMultiDict(_flip_one_signature_byte(headers)), SPACE)
    assert refused.value.name == "BadSpaceSignature"
    assert len(verifications) == 2  # the changed bytes were verified, not answered from the cache
    await verifier.verify(CIMultiDict(headers), SPACE)  # the original still verifies (from the cache)
    assert len(verifications) == 2


async def test_a_changed_signature_input_misses_the_cache(signed):
    verifier, headers, _clock, verifications = signed
    await verifier.verify(CIMultiDict(headers), SPACE)
    changed = {**headers, "Signature-Input": headers["Signature-Input"] + ", other=()"}
    await verifier.verify(CIMultiDict(changed), SPACE)  # an extra label is ignored, but re-verified
    assert len(verifications) == 2


async def test_an_expired_credential_is_refused_even_though_its_signature_is_cached(signed):
    verifier, headers, clock, verifications = signed
    await verifier.verify(CIMultiDict(headers), SPACE)
    clock.t += 600 + CLOCK_SKEW + 1
    with pytest.raises(NotAuthenticated) as refused:
        await verifier.verify(CIMultiDict(headers), SPACE)
    assert refused.value.name == "InvalidToken"
    assert len(verifications) == 1


async def test_a_cached_request_is_still_refused_for_another_space(signed):
    verifier, headers, _clock, verifications = signed
    await verifier.verify(CIMultiDict(headers), SPACE)
    with pytest.raises(NotAuthenticated) as refused:
        await verifier.verify(CIMultiDict(headers), SPACE + "-other")
    assert refused.value.name == "InvalidToken"
    assert len(verifications) == 1


async def test_the_cached_path_checks_the_window_between_exp_and_the_skew(signed):
    """The cache entry ends at exp; inside the clock-skew allowance the credential is still valid, and the
    signature is verified again rather than trusted."""
    verifier, headers, clock, verifications = signed
    await verifier.verify(CIMultiDict(headers), SPACE)
    clock.t += 600  # exactly exp: the entry has expired, the credential is still within the skew
    await verifier.verify(CIMultiDict(headers), SPACE)
    assert len(verifications) == 2
