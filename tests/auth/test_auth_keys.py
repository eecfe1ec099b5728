"""did:key / Multikey codecs and ECDSA rules for both curves."""

import libipld
import pytest
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from engram.auth.crypto_keys import CURVE_ORDER, KeyFormatError, PrivateKey, PublicKey

ALGS = ["ES256", "ES256K"]


def _high_s(sig: bytes, alg: str) -> bytes:
    return sig[:32] + (CURVE_ORDER[alg] - int.from_bytes(sig[32:], "big")).to_bytes(32, "big")


@pytest.mark.parametrize(
    "alg,prefix,codec", [("ES256", "did:key:zDn", b"\x80\x24"), ("ES256K", "did:key:zQ3s", b"\xe7\x01")]
)
def test_did_key_encoding_uses_the_multicodec_and_compressed_point(alg, prefix, codec):
    key = PrivateKey.generate(alg).public_key
    assert key.did_key.startswith(prefix) and key.did_key == "did:key:" + key.multibase
    raw = libipld.decode_multibase(key.multibase)[1]
    assert raw[:2] == codec and len(raw) == 35 and raw[2] in (2, 3)
    assert PublicKey.from_did_key(key.did_key) == key == PublicKey.from_multibase(key.multibase)


@pytest.mark.parametrize("alg", ALGS)
def test_signatures_are_compact_low_s_and_verify(alg):
    key = PrivateKey.generate(alg)
    for i in range(40):
        msg = f"message {i}".encode()
        sig = key.sign(msg)
        assert len(sig) == 64 and int.from_bytes(sig[32:], "big") <= CURVE_ORDER[alg] // 2
        assert key.public_key.verify(msg, sig, strict_low_s=True)
        assert not key.public_key.verify(msg + b"!", sig, strict_low_s=True)


@pytest.mark.parametrize("alg", ALGS)
def test_high_s_is_refused_only_in_strict_mode(alg):
    key = PrivateKey.generate(alg)
    high = _high_s(key.sign(b"m"), alg)
    assert not key.public_key.verify(b"m", high, strict_low_s=True)
    assert key.public_key.verify(b"m", high, strict_low_s=False)


@pytest.mark.parametrize("alg", ALGS)
def test_der_zero_and_out_of_range_signatures_are_refused(alg):
    key = PrivateKey.generate(alg)
    sig = key.sign(b"m")
    der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
    assert not key.public_key.verify(b"m", der, strict_low_s=False)
    assert not key.public_key.verify(b"m", bytes(64), strict_low_s=False)
    n = CURVE_ORDER[alg].to_bytes(32, "big")
    assert not key.public_key.verify(b"m", n + sig[32:], strict_low_s=False)
    assert not key.public_key.verify(b"m", sig[:63], strict_low_s=False)


def test_a_key_of_one_curve_does_not_verify_the_other():
    p256, k256 = PrivateKey.generate("ES256"), PrivateKey.generate("ES256K")
    assert not p256.public_key.verify(b"m", k256.sign(b"m"), strict_low_s=False)
    assert not k256.public_key.verify(b"m", p256.sign(b"m"), strict_low_s=False)


@pytest.mark.parametrize(
    "bad",
    [
        "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",  # Ed25519
        "did:key:zDnaeBAD0OIl",  # not base58
        "did:web:example.com",
        "did:key:",
        "did:key:"
        + libipld.encode_multibase("z", b"\x80\x24\x02" + (1).to_bytes(32, "big")),  # x=1: no point on P-256
        "did:key:" + libipld.encode_multibase("z", b"\xe7\x01" + b"\x04" + b"\x11" * 64),  # uncompressed
        "did:key:" + libipld.encode_multibase("f", b"\xe7\x01" + b"\x02" * 33),  # base16 multibase
    ],
)
def test_malformed_or_unsupported_keys_raise_key_format_error(bad):
    with pytest.raises(KeyFormatError):
        PublicKey.from_did_key(bad)


@pytest.mark.parametrize("alg", ALGS)
def test_private_key_round_trips_through_hex_and_multibase(alg):
    key = PrivateKey.generate(alg)
    assert PrivateKey.from_hex(alg, key.to_hex()).public_key == key.public_key
    assert PrivateKey.from_multibase(key.to_multibase()).public_key == key.public_key
    assert key.to_hex() not in repr(key)


def test_invalid_private_scalars_are_refused():
    for secret in (bytes(32), CURVE_ORDER["ES256"].to_bytes(32, "big"), b"\x01" * 31):
        with pytest.raises(KeyFormatError):
            PrivateKey.from_bytes("ES256", secret)
    with pytest.raises(KeyFormatError):
        PrivateKey.from_hex("ES256K", "zz")
