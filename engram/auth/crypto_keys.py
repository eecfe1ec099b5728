"""ECDSA public/private keys for the two atproto curves, in Multikey / did:key form.

- P-256 ("ES256") verifies with ``cryptography`` (OpenSSL, ~65 µs);
- secp256k1 ("ES256K") verifies with ``coincurve`` (libsecp256k1, ~35 µs, 9x faster than OpenSSL's K-256).

Signatures are always 64-byte compact ``r||s``; DER is rejected by length. ``strict_low_s`` is the atproto
rule for credentials, commits and JWTs we mint; RFC 9421 atproto-space and service-auth verify leniently.
Parsed keys are cached (``functools.lru_cache``) because decompressing a point costs 20-40 µs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Literal

import coincurve
from atproto_crypto.multibase import bytes_to_multibase, multibase_to_bytes
from coincurve.ecdsa import cdata_to_der, der_to_cdata, deserialize_compact, serialize_compact
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

Alg = Literal["ES256", "ES256K"]

# Multicodec varint prefixes (public: p256-pub 0x1200, secp256k1-pub 0xe7; private: p256-priv 0x1306,
# secp256k1-priv 0x1301).
_PUB_PREFIX: dict[str, bytes] = {"ES256": b"\x80\x24", "ES256K": b"\xe7\x01"}
_PRIV_PREFIX: dict[str, bytes] = {"ES256": b"\x86\x26", "ES256K": b"\x81\x26"}
CURVE_ORDER: dict[str, int] = {
    "ES256": 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551,
    "ES256K": 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141,
}
DID_KEY_PREFIX = "did:key:"
_ECDSA_SHA256 = ec.ECDSA(hashes.SHA256())


class KeyFormatError(ValueError):
    """A key string or key bytes that cannot be decoded."""


def _alg_of_prefixed(data: bytes, prefixes: dict[str, bytes]) -> tuple[Alg, bytes]:
    for alg, prefix in prefixes.items():
        if data.startswith(prefix):
            return alg, data[len(prefix) :]  # type: ignore[return-value]
    raise KeyFormatError("unsupported key type (only P-256 and secp256k1 multicodecs are accepted)")


def decode_multibase(value: str) -> bytes:
    if not isinstance(value, str) or not value.startswith("z") or len(value) > 128:
        raise KeyFormatError("key must be base58btc multibase ('z...')")
    try:
        return multibase_to_bytes(value)
    except ValueError as e:  # libipld's own message
        raise KeyFormatError(f"invalid multibase key: {e}") from None


@dataclass(frozen=True, eq=False)
class PublicKey:
    alg: Alg
    compressed: bytes  # 33-byte SEC1 compressed point
    _impl: Any = field(repr=False)

    @property
    def multibase(self) -> str:
        return bytes_to_multibase("z", _PUB_PREFIX[self.alg] + self.compressed)

    @property
    def did_key(self) -> str:
        return DID_KEY_PREFIX + self.multibase

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PublicKey) and (self.alg, self.compressed) == (other.alg, other.compressed)

    def __hash__(self) -> int:
        return hash((self.alg, self.compressed))

    @staticmethod
    def from_point(alg: Alg, point: bytes) -> PublicKey:
        """From a SEC1 point (33-byte compressed or 65-byte uncompressed); KeyFormatError if off-curve."""
        try:
            if alg == "ES256K":
                impl: Any = coincurve.PublicKey(point)
                compressed = impl.format(compressed=True)
            elif alg == "ES256":
                impl = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
                compressed = impl.public_bytes(
                    serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint
                )
            else:
                raise KeyFormatError(f"unsupported alg {alg!r}")
        except ValueError as e:  # coincurve and cryptography both raise ValueError for bad points
            raise KeyFormatError(f"invalid {alg} public key point: {e}") from None
        return PublicKey(alg, compressed, impl)

    @staticmethod
    def from_multibase(multibase: str) -> PublicKey:
        return _parse_multikey_cached(multibase)

    @staticmethod
    def from_did_key(did_key: str) -> PublicKey:
        if not isinstance(did_key, str) or not did_key.startswith(DID_KEY_PREFIX):
            raise KeyFormatError("not a did:key")
        return _parse_multikey_cached(did_key[len(DID_KEY_PREFIX) :])

    def verify(self, message: bytes, signature: bytes, *, strict_low_s: bool) -> bool:
        """ECDSA-SHA256 over ``message`` with a 64-byte compact r||s signature. Never raises on bad input."""
        if len(signature) != 64:
            return False  # DER (70-72 bytes) and anything else
        n = CURVE_ORDER[self.alg]
        r = int.from_bytes(signature[:32], "big")
        s = int.from_bytes(signature[32:], "big")
        if not (0 < r < n and 0 < s < n):
            return False
        if s > n // 2:
            if strict_low_s:
                return False
            # (r, s) and (r, n-s) are the same signature; libsecp256k1 only accepts the low form.
            s = n - s
        if self.alg == "ES256K":
            der = cdata_to_der(deserialize_compact(signature[:32] + s.to_bytes(32, "big")))
            return self._impl.verify(der, message)
        try:
            self._impl.verify(encode_dss_signature(r, s), message, _ECDSA_SHA256)
            return True
        except InvalidSignature:
            return False


@functools.lru_cache(maxsize=4096)
def _parse_multikey_cached(multibase: str) -> PublicKey:
    alg, point = _alg_of_prefixed(decode_multibase(multibase), _PUB_PREFIX)
    if len(point) != 33:
        raise KeyFormatError("Multikey public keys must be 33-byte compressed points")
    return PublicKey.from_point(alg, point)


class PrivateKey:
    """A signing key. Signatures are 64-byte compact r||s, always low-S."""

    def __init__(self, alg: Alg, secret: bytes):
        if alg not in _PUB_PREFIX:
            raise KeyFormatError(f"unsupported alg {alg!r}")
        if len(secret) != 32 or not 0 < int.from_bytes(secret, "big") < CURVE_ORDER[alg]:
            raise KeyFormatError("private key must be a 32-byte scalar in [1, n-1]")
        self.alg: Alg = alg
        self._secret = secret
        if alg == "ES256K":
            self._impl: Any = coincurve.PrivateKey(secret)
            self.public_key = PublicKey.from_point(alg, self._impl.public_key.format(compressed=True))
        else:
            self._impl = ec.derive_private_key(int.from_bytes(secret, "big"), ec.SECP256R1())
            point = self._impl.public_key().public_bytes(
                serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint
            )
            self.public_key = PublicKey.from_point(alg, point)

    def __repr__(self) -> str:  # never print the secret
        return f"PrivateKey({self.alg}, {self.public_key.did_key})"

    @staticmethod
    def generate(alg: Alg = "ES256") -> PrivateKey:
        if alg == "ES256K":
            return PrivateKey(alg, coincurve.PrivateKey().secret)
        value = ec.generate_private_key(ec.SECP256R1()).private_numbers().private_value
        return PrivateKey(alg, value.to_bytes(32, "big"))

    @staticmethod
    def from_bytes(alg: Alg, secret: bytes) -> PrivateKey:
        return PrivateKey(alg, secret)

    @staticmethod
    def from_hex(alg: Alg, hex_secret: str) -> PrivateKey:
        try:
            secret = bytes.fromhex(hex_secret.strip())
        except ValueError:
            raise KeyFormatError("private key hex is not valid hex") from None
        return PrivateKey(alg, secret)

    @staticmethod
    def from_multibase(value: str) -> PrivateKey:
        """A multicodec-prefixed private key (p256-priv / secp256k1-priv), base58btc 'z'."""
        alg, secret = _alg_of_prefixed(decode_multibase(value), _PRIV_PREFIX)
        return PrivateKey(alg, secret)

    def to_hex(self) -> str:
        return self._secret.hex()

    def to_multibase(self) -> str:
        return bytes_to_multibase("z", _PRIV_PREFIX[self.alg] + self._secret)

    def sign(self, message: bytes) -> bytes:
        if self.alg == "ES256K":
            # libsecp256k1 signs deterministically and always emits low-S
            # (docs/protocol.md#signatures-engram-makes).
            return serialize_compact(der_to_cdata(self._impl.sign(message)))
        r, s = decode_dss_signature(self._impl.sign(message, _ECDSA_SHA256))
        n = CURVE_ORDER["ES256"]
        s = min(s, n - s)
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")
