"""DAG-CBOR blocks, their CIDs, and the atproto JSON form of IPLD values.

Encoding and decoding are libipld's (the Rust codec the atproto SDK uses). Two small things are assembled
here because libipld has no call for them: the 4-byte CIDv1 prefix (libipld builds a CID string from CID
bytes, not from a digest) and the mapping between atproto's JSON form (``{"$bytes"}`` / ``{"$link"}``) and
IPLD values, which is a dozen lines of recursion.

libipld represents a CID inside a DAG-CBOR value as its raw bytes, and on encoding it writes any ``bytes``
value whose *start* parses as a CID as a link (tag 42): about 1 in 2,400 random byte strings of 32 bytes
or more. Opaque bytes (a commit's hash, a vector) must stay byte strings, so `encode_block` hands libipld a
same-length placeholder that cannot parse as a CID and puts the real bytes back into the byte string
libipld laid out (a byte string's header depends only on its length, so the result is exactly the
canonical encoding). Links are marked with `CidLink` (a bytes subclass libipld encodes as tag 42).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from typing import Any

import libipld

from engram.atrepo.errors import RepoFormatError

_CID_V1_DAG_CBOR_SHA256 = bytes([0x01, 0x71, 0x12, 0x20])  # version 1, dag-cbor, sha2-256, 32-byte digest


class CidLink(bytes):
    """Raw CID bytes meant as a link (tag 42), as opposed to opaque bytes."""


def encode_block(value: Any) -> bytes:
    swaps: list[tuple[bytes, bytes]] = []
    try:
        data = libipld.encode_dag_cbor(_mask(value, swaps))
    except (ValueError, TypeError, OverflowError) as e:
        raise RepoFormatError(f"value cannot be encoded as DAG-CBOR: {e}") from None
    for placeholder, real in swaps:
        at = data.find(placeholder)
        data = data[:at] + real + data[at + len(real) :]
    return data


def _mask(value: Any, swaps: list[tuple[bytes, bytes]]) -> Any:
    if isinstance(value, dict):
        return {key: _mask(item, swaps) for key, item in value.items()}
    if isinstance(value, list):
        return [_mask(item, swaps) for item in value]
    if type(value) is bytes and bytes_look_like_cid(value):
        while True:  # a leading 0x00 is never a CID; the random rest makes the placeholder unique
            placeholder = b"\x00" + os.urandom(len(value) - 1)
            if not any(placeholder in other or other in placeholder for other, _ in swaps):
                break
        swaps.append((placeholder, value))
        return placeholder
    return value


def decode_block(data: bytes) -> Any:
    try:
        return libipld.decode_dag_cbor(data)
    except (ValueError, RecursionError) as e:
        raise RepoFormatError(f"invalid DAG-CBOR block: {e}") from None


def cid_bytes_of_block(data: bytes) -> bytes:
    return _CID_V1_DAG_CBOR_SHA256 + hashlib.sha256(data).digest()


def cid_of_block(data: bytes) -> str:
    """CIDv1 (dag-cbor, sha2-256) of an encoded block, as its base32 string ('bafyrei...')."""
    return libipld.encode_cid(cid_bytes_of_block(data))


def cid_of_value(value: Any) -> str:
    return cid_of_block(encode_block(value))


def cid_to_bytes(cid: str) -> bytes:
    try:
        libipld.decode_cid(cid)
        return libipld.decode_multibase(cid)[1]
    except (ValueError, TypeError) as e:
        raise RepoFormatError(f"invalid CID {cid!r}: {e}") from None


def cid_to_str(raw: bytes) -> str:
    try:
        return libipld.encode_cid(raw)
    except (ValueError, TypeError) as e:
        raise RepoFormatError(f"invalid CID bytes: {e}") from None


def bytes_look_like_cid(data: bytes) -> bool:
    try:
        libipld.decode_cid(data)
    except (ValueError, TypeError):
        return False
    return True


def from_json(value: Any) -> Any:
    """atproto JSON (``{"$bytes": base64}``, ``{"$link": cid}``) to the IPLD value libipld encodes. A value
    nested past Python's recursion limit (a PDS may send one) is a RepoFormatError, as any malformed
    record is, never a RecursionError that would escape the sync pass."""
    try:
        return _from_json(value)
    except RecursionError:
        raise RepoFormatError("a value is nested too deeply to decode") from None


def _from_json(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1 and "$bytes" in value:
            return _b64decode(value["$bytes"])
        if len(value) == 1 and "$link" in value:
            return CidLink(cid_to_bytes(value["$link"]))
        return {key: _from_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_from_json(item) for item in value]
    return value


def to_json(value: Any) -> Any:
    """The inverse of `from_json` for decoded blocks (CIDs come back from libipld as bytes that parse)."""
    try:
        return _to_json(value)
    except RecursionError:
        raise RepoFormatError("a value is nested too deeply to encode as JSON") from None


def _to_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _to_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_to_json(item) for item in value]
    if isinstance(value, bytes):
        # A decoded block gives links and bytes alike as bytes; one that parses as a CID is read as a link.
        if isinstance(value, CidLink) or bytes_look_like_cid(value):
            return {"$link": cid_to_str(value)}
        return {"$bytes": b64encode(value)}
    return value


def b64encode(data: bytes) -> str:
    """atproto's `$bytes`: standard base64 without padding."""
    return base64.b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(text: Any) -> bytes:
    if not isinstance(text, str):
        raise RepoFormatError("$bytes must be a base64 string")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise RepoFormatError("$bytes is not valid base64") from None
