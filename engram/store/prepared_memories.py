"""Validate a `MemoryWrite` and turn it into what gets stored: f16 bytes, the record, its CID.

Pure (no database), so it is the one place the lexicon's limits for memory records are enforced for every
way in (import, shims, sync). Bad input raises `InvalidInput` with a message naming the field.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import libipld
import numpy as np
import orjson

from engram.errors import InvalidInput
from engram.identifiers import check_datetime, is_did
from engram.store.attrs import check_attrs, nul_path
from engram.store.models import Embedding, MemoryWrite
from engram.store.records import cid_of_bytes, embedding_record, encode_record, memory_record
from engram.store.tid import is_valid_tid

# garden.engram.memory lexicon limits (docs/protocol.md#memory-records); string lengths are UTF-8 bytes.
MAX_TEXT_BYTES = 30000
MAX_TAGS = 16
MAX_TAG_BYTES = 128
MAX_SOURCE_BYTES = 2000
MAX_DIMS = 16000
MAX_IDEMPOTENCY_KEY = 512
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_F16LE = np.dtype("<f2")


@dataclass(frozen=True)
class PreparedMemory:
    author: str
    rkey: str | None
    text: str
    tags: tuple[str, ...]
    source: str | None
    attrs_json: str | None
    created_at: str
    created_ms: int
    cid: str
    vector: bytes | None
    model_key: str | None
    next_vector: bytes | None
    next_model_key: str | None
    idempotency_key: str | None
    record_block: (
        bytes  # the garden.engram.memory record as DAG-CBOR (hosted spaces serve it from their repo)
    )


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_datetime_ms(value: str, what: str = "createdAt") -> int:
    """Milliseconds since the epoch of an atproto datetime (docs/protocol.md#string-formats: the
    lexicons' `datetime` format, which every answer is checked against, engram/identifiers.py); anything
    else is refused here, so no stored value can fail an answer."""
    problem = check_datetime(value) if isinstance(value, str) else "must be a string"
    try:
        parsed = datetime.fromisoformat(value) if problem is None else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise InvalidInput(f"{what} {problem or 'must be an RFC 3339 datetime'}, got {str(value)[:64]!r}")
    return (parsed - _EPOCH) // timedelta(milliseconds=1)  # integer math: float timestamps round


def f16_bytes(vector: np.ndarray | bytes, dims: int, what: str = "embedding") -> bytes:
    if not isinstance(dims, int) or not 1 <= dims <= MAX_DIMS:
        raise InvalidInput(f"{what}.dims must be an integer in 1..{MAX_DIMS}")
    if isinstance(vector, bytes | bytearray | memoryview):
        raw = bytes(vector)
        if len(raw) != dims * 2:
            raise InvalidInput(f"{what}.vector is {len(raw)} bytes, expected {dims * 2} for {dims} dims")
        values = np.frombuffer(raw, dtype="<f2")
    elif isinstance(vector, np.ndarray) and vector.dtype == _F16LE and vector.shape == (dims,):
        values = vector  # already what is stored (embed_documents' rows): no conversion, no copy
        raw = values.tobytes()
    else:
        array = np.asarray(vector)
        if array.ndim != 1 or array.shape[0] != dims or not np.issubdtype(array.dtype, np.floating):
            raise InvalidInput(f"{what}.vector must be a 1-d float array of {dims} values")
        with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf is reported just below
            values = array.astype("<f2")
        raw = values.tobytes()
    if not np.isfinite(values).all():
        raise InvalidInput(f"{what}.vector contains NaN or infinity (or overflows float16)")
    return raw


def _utf8_len(value: str) -> int:
    return len(value.encode("utf-8"))


def _embedding(embedding: Embedding | None, what: str) -> tuple[bytes | None, dict[str, Any] | None]:
    if embedding is None:
        return None, None
    if not isinstance(embedding.model, str) or not isinstance(embedding.model_digest, str):
        raise InvalidInput(f"{what}.model and {what}.modelDigest must be strings")
    raw = f16_bytes(embedding.vector, embedding.dims, what)
    return raw, embedding_record(embedding.model, embedding.model_digest, embedding.dims, raw)


def prepare_write(item: MemoryWrite) -> PreparedMemory:
    if not is_did(item.author):
        raise InvalidInput(f"author must be a DID, got {item.author!r}")
    if item.rkey is not None and not is_valid_tid(item.rkey):
        raise InvalidInput(f"rkey must be a TID, got {item.rkey!r}")
    if not isinstance(item.text, str) or _utf8_len(item.text) > MAX_TEXT_BYTES:
        raise InvalidInput(f"text must be a string of at most {MAX_TEXT_BYTES} UTF-8 bytes")
    tags = tuple(item.tags or ())
    if len(tags) > MAX_TAGS or not all(
        isinstance(t, str) and 0 < _utf8_len(t) <= MAX_TAG_BYTES for t in tags
    ):
        raise InvalidInput(f"tags: at most {MAX_TAGS} non-empty strings of at most {MAX_TAG_BYTES} bytes")
    if item.source is not None and (
        not isinstance(item.source, str) or _utf8_len(item.source) > MAX_SOURCE_BYTES
    ):
        raise InvalidInput(f"source must be a string of at most {MAX_SOURCE_BYTES} UTF-8 bytes")
    created_at = now_iso() if item.created_at is None else item.created_at
    created_ms = parse_datetime_ms(created_at)
    check_attrs(item.attrs)
    nul = nul_path({"text": item.text, "tags": list(tags), "source": item.source, "attrs": item.attrs})
    if nul is not None:  # PostgreSQL cannot hold U+0000: refused on every backend alike (store/attrs.py)
        raise InvalidInput(
            f"{'.'.join(map(str, nul))} contains a NUL character (U+0000), which cannot be stored"
        )
    try:
        attrs_json = orjson.dumps(item.attrs).decode() if item.attrs else None
    except TypeError as exc:
        raise InvalidInput(f"attrs must be JSON-serialisable: {exc}") from None
    key = item.idempotency_key
    if key is not None and (not isinstance(key, str) or not 0 < len(key) <= MAX_IDEMPOTENCY_KEY):
        raise InvalidInput(f"idempotency key must be a non-empty string of at most {MAX_IDEMPOTENCY_KEY}")
    vector, embedding = _embedding(item.embedding, "embedding")
    next_vector, next_embedding = _embedding(item.next_embedding, "nextEmbedding")
    record_block = encode_record(
        memory_record(
            text=item.text,
            created_at=created_at,
            tags=tags,
            source=item.source,
            embedding=embedding,
            next_embedding=next_embedding,
        )
    )
    if item.cid is not None:
        try:
            if not isinstance(item.cid, str):
                raise TypeError
            libipld.decode_cid(item.cid)
        except (ValueError, TypeError):
            raise InvalidInput(f"cid is not a CID: {item.cid!r}") from None
        cid = item.cid
    else:
        cid = cid_of_bytes(record_block)
    return PreparedMemory(
        author=item.author,
        rkey=item.rkey,
        text=item.text,
        tags=tags,
        source=item.source,
        attrs_json=attrs_json,
        created_at=created_at,
        created_ms=created_ms,
        cid=cid,
        vector=vector,
        model_key=item.embedding.key if item.embedding else None,
        next_vector=next_vector,
        next_model_key=item.next_embedding.key if item.next_embedding else None,
        idempotency_key=key,
        record_block=record_block,
    )


def filter_clauses(
    space_id: int, author: str | None, tags: Sequence[str], since: str | None, *, table: str = ""
) -> tuple[list[str], list[Any]]:
    """WHERE clauses and parameters for the author / all-of tags / since filters (listing and keyword
    search filter alike). `table` prefixes column names ("m." in a join)."""
    where: list[str] = [f"{table}space_id = ?"]
    params: list[Any] = [space_id]
    if author is not None:
        where.append(f"{table}author = ?")
        params.append(author)
    for tag in dict.fromkeys(tags):
        where.append(f"{table}row_id IN (SELECT row_id FROM memory_tags WHERE space_id = ? AND tag = ?)")
        params += [space_id, tag]
    if since is not None:
        where.append(f"{table}created_ms >= ?")
        params.append(parse_datetime_ms(since, "since"))
    return where, params
