"""garden.engram.memory records and their CIDs.

A memory's `cid` is the CIDv1 (codec dag-cbor 0x71, multihash sha2-256) of the record's DAG-CBOR
encoding, exactly what a PDS would compute for the same record. Encoding uses `libipld` (the Rust codec
atproto's own SDK uses), which implements DAG-CBOR's canonical map ordering; only the 4-byte CID prefix is
assembled here, because libipld builds CIDs from bytes but not from a digest.
"""

from __future__ import annotations

import hashlib
from typing import Any

import libipld

from engram.atrepo.blocks import encode_block

MEMORY_TYPE = "garden.engram.memory"
F16LE = "f16le"
_CID_V1_DAG_CBOR_SHA256 = bytes([0x01, 0x71, 0x12, 0x20])  # version 1, dag-cbor, sha2-256, 32-byte digest


def embedding_record(model: str, model_digest: str, dims: int, vector: bytes) -> dict[str, Any]:
    return {"model": model, "modelDigest": model_digest, "dims": dims, "encoding": F16LE, "vector": vector}


def memory_record(
    *,
    text: str,
    created_at: str,
    tags: tuple[str, ...] | list[str] = (),
    source: str | None = None,
    embedding: dict[str, Any] | None = None,
    next_embedding: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The record as an author would write it; optional fields are omitted when empty (not null)."""
    record: dict[str, Any] = {"$type": MEMORY_TYPE, "text": text, "createdAt": created_at}
    if tags:
        record["tags"] = list(tags)
    if source is not None:
        record["source"] = source
    if embedding is not None:
        record["embedding"] = embedding
    if next_embedding is not None:
        record["nextEmbedding"] = next_embedding
    return record


def encode_record(record: dict[str, Any]) -> bytes:
    # Through engram.atrepo: libipld alone writes any bytes value that happens to parse as a CID (a vector,
    # about 1 in 2,400) as a link, which changes the record's CID.
    return encode_block(record)


def cid_of_bytes(data: bytes) -> str:
    """CIDv1 dag-cbor sha2-256 of already-encoded DAG-CBOR, in its base32 string form ('bafyrei...')."""
    return libipld.encode_cid(_CID_V1_DAG_CBOR_SHA256 + hashlib.sha256(data).digest())


def record_cid(record: dict[str, Any]) -> str:
    return cid_of_bytes(encode_record(record))
