import base64
import hashlib
import struct

import libipld
import numpy as np
import pytest

from engram.errors import InvalidInput
from engram.store import Embedding, MemoryWrite
from engram.store.prepared_memories import prepare_write
from engram.store.records import embedding_record, encode_record, memory_record, record_cid
from engram.store.tid import decode_tid, encode_tid, is_valid_tid, new_tid


def _head(major: int, n: int) -> bytes:
    if n < 24:
        return bytes([major << 5 | n])
    for extra, fmt in ((24, ">B"), (25, ">H"), (26, ">I"), (27, ">Q")):
        if n < 256 ** struct.calcsize(fmt):
            return bytes([major << 5 | extra]) + struct.pack(fmt, n)
    raise ValueError(n)


def independent_dag_cbor(value) -> bytes:
    """A minimal DAG-CBOR encoder written from the spec (RFC 8949 + DAG-CBOR key order), to cross-check."""
    if isinstance(value, bool) or value is None:
        return {False: b"\xf4", True: b"\xf5", None: b"\xf6"}[value]
    if isinstance(value, int):
        return _head(0, value) if value >= 0 else _head(1, -1 - value)
    if isinstance(value, bytes):
        return _head(2, len(value)) + value
    if isinstance(value, str):
        raw = value.encode()
        return _head(3, len(raw)) + raw
    if isinstance(value, list):
        return _head(4, len(value)) + b"".join(independent_dag_cbor(v) for v in value)
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (len(k.encode()), k.encode()))  # length first, then bytes
        return _head(5, len(value)) + b"".join(
            independent_dag_cbor(k) + independent_dag_cbor(value[k]) for k in keys
        )
    raise TypeError(type(value))


def independent_cid(data: bytes) -> str:
    raw = bytes([0x01, 0x71, 0x12, 0x20]) + hashlib.sha256(data).digest()
    return "b" + base64.b32encode(raw).decode().lower().rstrip("=")


def _record():
    vector = np.arange(384, dtype=np.float16).tobytes()
    return memory_record(
        text="The deploy key lives in the vault, not in the repo.",
        created_at="2026-01-02T03:04:05.678Z",
        tags=["ops", "secrets"],
        source="https://example.com/runbook",
        embedding=embedding_record("all-MiniLM-L6-v2", "sha256:abc", 384, vector),
    )


def test_cid_matches_an_independent_encoding():
    record = _record()
    encoded = encode_record(record)
    assert encoded == independent_dag_cbor(record)
    assert record_cid(record) == independent_cid(encoded)
    decoded = libipld.decode_cid(record_cid(record))
    assert (decoded["version"], decoded["codec"], decoded["hash"]["code"]) == (1, 0x71, 0x12)
    assert libipld.decode_dag_cbor(encoded) == record


def test_cid_known_vector():
    # {"a": 1} is a1 61 61 01; its CIDv1 dag-cbor sha2-256 is a fixed, widely reproduced value.
    assert encode_record({"a": 1}) == bytes.fromhex("a1616101")
    assert record_cid({"a": 1}) == "bafyreihltcnuuyqp2jm24aqydpnlj7b6w3ogwrplomrjtg5rifv44mmjey"


def test_cid_depends_on_content_and_key_order_does_not_matter():
    record = _record()
    reordered = dict(reversed(list(record.items())))
    assert record_cid(reordered) == record_cid(record)
    assert record_cid({**record, "text": record["text"] + "!"}) != record_cid(record)


def test_prepare_write_cid_is_the_cid_of_the_record_an_author_would_write():
    vector = np.linspace(-1, 1, 8, dtype=np.float32)
    prepared = prepare_write(
        MemoryWrite(
            "did:plc:alice",
            "hello",
            tags=["a"],
            created_at="2026-01-02T03:04:05Z",
            embedding=Embedding("m", "d", 8, vector),
        )
    )
    expected = {
        "$type": "garden.engram.memory",
        "text": "hello",
        "createdAt": "2026-01-02T03:04:05Z",
        "tags": ["a"],
        "embedding": {
            "model": "m",
            "modelDigest": "d",
            "dims": 8,
            "encoding": "f16le",
            "vector": vector.astype("<f2").tobytes(),
        },
    }
    assert prepared.cid == independent_cid(independent_dag_cbor(expected))
    assert prepared.vector == vector.astype("<f2").tobytes()
    assert prepared.created_ms == 1767323045000


@pytest.mark.parametrize(
    "change, message",
    [
        ({"author": "alice"}, "author"),
        ({"rkey": "not-a-tid"}, "rkey"),
        ({"text": "x" * 30001}, "text"),
        ({"tags": [str(i) for i in range(17)]}, "tags"),
        ({"tags": [""]}, "tags"),
        ({"source": "s" * 2001}, "source"),
        ({"created_at": "2026-01-02"}, "createdAt"),
        ({"created_at": "2026-01-02T03:04:05"}, "createdAt"),
        ({"attrs": {"x": object()}}, "attrs"),
        ({"embedding": Embedding("m", "d", 8, b"\x00" * 15)}, "bytes"),
        ({"embedding": Embedding("m", "d", 8, np.zeros(7))}, "8 values"),
        ({"embedding": Embedding("m", "d", 8, np.full(8, np.nan))}, "NaN"),
        ({"embedding": Embedding("m", "d", 2, np.array([1e6, 0.0]))}, "NaN or infinity"),
        ({"embedding": Embedding("m", "d", 0, b"")}, "dims"),
        ({"cid": "bafynotacid"}, "cid"),
    ],
)
def test_prepare_write_rejects_bad_input_clearly(change, message):
    item = MemoryWrite("did:plc:alice", "hello")
    for name, value in change.items():
        setattr(item, name, value)
    with pytest.raises(InvalidInput, match=message):
        prepare_write(item)


def test_tids_are_valid_unique_and_sortable():
    tids = [new_tid() for _ in range(5000)]
    assert len(set(tids)) == len(tids)
    assert tids == sorted(tids)
    assert all(is_valid_tid(t) and len(t) == 13 for t in tids)


def test_tid_encoding_round_trips_and_orders_by_time():
    assert encode_tid(0, 0) == "2222222222222"
    assert decode_tid(encode_tid(1_700_000_000_123_456, 513)) == (1_700_000_000_123_456, 513)
    assert encode_tid(1_700_000_000_000_000, 1023) < encode_tid(1_700_000_000_000_001, 0)
    assert is_valid_tid("3jzfcijpj2z2a")  # from the atproto spec's examples
    for bad in ("3jzfcijpj2z2", "3jzfcijpj2z2aa", "kjzfcijpj2z2a", "3JZFCIJPJ2Z2A", "3jzfcijpj2z2a\n", 7):
        assert not is_valid_tid(bad)
    with pytest.raises(ValueError):
        encode_tid(2**53, 0)
