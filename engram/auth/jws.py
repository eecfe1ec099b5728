"""Compact JWS (RFC 7515) with the two atproto algorithms, ES256 and ES256K.

Hand-written rather than PyJWT/joserfc: neither does ES256K with compact low-S rules the way atproto needs,
and the whole format is a split, three strict base64url decodes and two JSON parses (~3 µs with orjson).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

import orjson

from engram.auth.crypto_keys import PrivateKey

MAX_JWT_LENGTH = 8192  # a credential is ~600 bytes; refuse to parse anything absurd


class JwsError(ValueError):
    """Malformed compact JWS."""


def b64url_decode(text: str) -> bytes:
    """Strict unpadded base64url: rejects padding, other alphabets and non-zero trailing bits, so every
    token has exactly one encoding (a changed character can never decode to the same bytes)."""
    if len(text) % 4 == 1:
        raise JwsError("invalid base64url length")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise JwsError("invalid base64url") from None
    if b64url_encode(data) != text:
        raise JwsError("non-canonical base64url")
    return data


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class Jws:
    header: dict[str, Any]
    payload: dict[str, Any]
    signing_input: bytes
    signature: bytes


def parse_jws(token: str) -> Jws:
    if not isinstance(token, str) or len(token) > MAX_JWT_LENGTH or not token.isascii():
        raise JwsError("token is not a compact JWS")
    parts = token.split(".")
    if len(parts) != 3:
        raise JwsError("a compact JWS has exactly three parts")
    try:
        header = orjson.loads(b64url_decode(parts[0]))
        payload = orjson.loads(b64url_decode(parts[1]))
    except orjson.JSONDecodeError:
        raise JwsError("JWS header or payload is not JSON") from None
    if not isinstance(header, dict) or not isinstance(payload, dict):
        raise JwsError("JWS header and payload must be JSON objects")
    signature = b64url_decode(parts[2])
    return Jws(header, payload, f"{parts[0]}.{parts[1]}".encode("ascii"), signature)


def sign_jws(key: PrivateKey, header: dict[str, Any], payload: dict[str, Any]) -> str:
    """Sign with ``key``; the header's ``alg`` is set from the key type."""
    header = {**header, "alg": key.alg}
    signing_input = f"{b64url_encode(orjson.dumps(header))}.{b64url_encode(orjson.dumps(payload))}"
    return f"{signing_input}.{b64url_encode(key.sign(signing_input.encode('ascii')))}"
