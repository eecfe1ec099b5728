"""``getRepo`` exports: a CARv1 whose roots are [signed commit, repo index] (docs/sync.md).

Layout, as the reference verifier reads it: header, the commit block, the index block (a DAG-CBOR map
``{"collection/rkey": CID}``), then one record block per index entry in the index's canonical key order
(shorter keys first, then bytewise), and nothing else. ``exclude_values`` gives the two roots only.

Decoding uses ``libipld.decode_car``, but it returns blocks in a dict keyed by CID, which loses the order
and silently merges duplicates, so the layout is checked by walking the frames here: each frame is
``varint(len) || CID || block``. The varint framing (unsigned LEB128) is the only hand-written part, and
the writer reuses it; the header and every block are libipld-encoded DAG-CBOR.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import libipld

from engram.atrepo.blocks import (
    CidLink,
    cid_bytes_of_block,
    cid_to_bytes,
    cid_to_str,
    decode_block,
    encode_block,
)
from engram.atrepo.commit import CommitContext, SignedCommit, verify_commit
from engram.atrepo.errors import CommitVerificationError, RepoFormatError
from engram.atrepo.ops import set_hash_of_index
from engram.auth.crypto_keys import PublicKey

MAX_CAR_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class RepoRecord:
    collection: str
    rkey: str
    cid: str
    block: bytes

    @property
    def path(self) -> str:
        return f"{self.collection}/{self.rkey}"

    def value(self) -> Any:
        return decode_block(self.block)


@dataclass(frozen=True)
class VerifiedRepo:
    commit: SignedCommit
    index: dict[str, str]  # "collection/rkey" -> cid, in canonical order
    records: list[RepoRecord]  # empty for an index-only export


def canonical_path_order(paths: Any) -> list[str]:
    return sorted(paths, key=lambda path: (len(path.encode()), path.encode()))


def write_repo_car(commit: SignedCommit, records: list[RepoRecord], *, exclude_values: bool = False) -> bytes:
    by_path = {record.path: record for record in records}
    paths = canonical_path_order(by_path)
    commit_block = commit.to_cbor()
    index_block = encode_block({path: CidLink(cid_to_bytes(by_path[path].cid)) for path in paths})
    commit_cid, index_cid = cid_bytes_of_block(commit_block), cid_bytes_of_block(index_block)
    out = bytearray(_frame(encode_block({"roots": [CidLink(commit_cid), CidLink(index_cid)], "version": 1})))
    out += _frame(commit_cid + commit_block) + _frame(index_cid + index_block)
    if not exclude_values:
        for path in paths:
            record = by_path[path]
            out += _frame(cid_to_bytes(record.cid) + record.block)
    return bytes(out)


def verify_repo_car(
    data: bytes, space: str, author: str, key: PublicKey | str, *, expect_values: bool = True
) -> VerifiedRepo:
    """Check an export end to end; raise RepoFormatError (layout) or CommitVerificationError (content)."""
    if len(data) > MAX_CAR_BYTES:
        raise RepoFormatError("repo export is too large")
    try:
        header, _ = libipld.decode_car(data)  # full structural parse first (header shape, every block)
    except (ValueError, RecursionError) as e:
        raise RepoFormatError(f"invalid CAR: {e}") from None
    roots = header.get("roots") if isinstance(header, dict) else None
    if header.get("version") != 1 or not isinstance(roots, list) or len(roots) != 2:
        raise RepoFormatError("a repo export is a CARv1 with two roots (commit, index)")
    frames = list(_read_frames(data))
    if len(frames) < 2 or frames[0][0] != roots[0] or frames[1][0] != roots[1]:
        raise RepoFormatError("the commit and index blocks must lead the CAR, in root order")
    commit = SignedCommit.from_cbor(frames[0][1])
    index = _decode_index(frames[1][1])
    verify_commit(commit, CommitContext(space, author, commit.rev), key, set_hash_of_index(index).digest())
    paths = canonical_path_order(index)
    blocks = frames[2:]
    if not expect_values:
        if blocks:
            raise RepoFormatError("an index-only export carries record blocks")
        return VerifiedRepo(commit, {path: index[path] for path in paths}, [])
    if len(blocks) != len(paths):
        raise RepoFormatError(f"the export has {len(blocks)} record blocks for {len(paths)} index entries")
    records = []
    for path, (cid_raw, block) in zip(paths, blocks, strict=True):
        if cid_to_str(cid_raw) != index[path]:
            raise CommitVerificationError(f"record block for {path} is not the indexed record")
        collection, rkey = path.split("/")
        records.append(RepoRecord(collection, rkey, index[path], block))
    return VerifiedRepo(commit, {path: index[path] for path in paths}, records)


def _decode_index(block: bytes) -> dict[str, str]:
    value = decode_block(block)
    if not isinstance(value, dict):
        raise RepoFormatError("repo index must be a map")
    index = {}
    for path, cid_raw in value.items():
        if path.count("/") != 1 or "" in path.split("/") or not isinstance(cid_raw, bytes):
            raise RepoFormatError(f"invalid repo index entry {path!r}")
        index[path] = cid_to_str(cid_raw)
    return index


def _frame(payload: bytes) -> bytes:
    return _varint(len(payload)) + payload


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(data) and shift < 64:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise RepoFormatError("truncated CAR frame length")


def _read_frames(data: bytes):
    """(cid bytes, block bytes) for each block frame after the header, in file order, hashes checked."""
    length, pos = _read_varint(data, 0)
    pos += length
    while pos < len(data):
        length, pos = _read_varint(data, pos)
        frame, pos = data[pos : pos + length], pos + length
        if len(frame) != length:
            raise RepoFormatError("truncated CAR block")
        cid_raw, block = frame[:36], frame[36:]
        if cid_raw != cid_bytes_of_block(block):
            # Only CIDv1 dag-cbor sha2-256 blocks appear in a repo export; anything else cannot be checked.
            raise CommitVerificationError("a CAR block does not match its CID")
        yield cid_raw, block
