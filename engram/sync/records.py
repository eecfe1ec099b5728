"""Repo records as engram sees them: garden.engram.memory → a memory, garden.engram.config/self (from the
authority only) → the space config. Records that do not fit are not indexed (a record without text is
treated as deleted, docs/sync.md#records-models-and-limits); an embedding that is malformed is dropped, so the
memory is stored and counted as skipped rather than failing the whole repo."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engram.atrepo.blocks import to_json
from engram.store import Embedding, MemoryWrite, ModelSpec
from engram.store.tid import is_valid_tid

MEMORY = "garden.engram.memory"
CONFIG = "garden.engram.config"
CONFIG_RKEY = "self"


def memory_from_record(author: str, rkey: str, cid: str, value: Any) -> MemoryWrite | None:
    if not isinstance(value, dict) or not is_valid_tid(rkey):
        return None
    text = value.get("text")
    if not isinstance(text, str) or not text:
        return None
    tags = value.get("tags") or []
    tags = [t for t in tags if isinstance(t, str) and t] if isinstance(tags, list) else []
    source = value.get("source") if isinstance(value.get("source"), str) else None
    created_at = value.get("createdAt") if isinstance(value.get("createdAt"), str) else None
    return MemoryWrite(
        author=author,
        rkey=rkey,
        text=text,
        tags=tags[:16],
        source=source,
        created_at=created_at,
        embedding=_embedding(value.get("embedding")),
        next_embedding=_embedding(value.get("nextEmbedding")),
        cid=cid,
    )


def _embedding(value: Any) -> Embedding | None:
    if not isinstance(value, dict):
        return None
    model, digest, dims, vector = (
        value.get("model"),
        value.get("modelDigest"),
        value.get("dims"),
        value.get("vector"),
    )
    if not (isinstance(model, str) and isinstance(digest, str) and type(dims) is int and 0 < dims <= 16000):
        return None
    if value.get("encoding", "f16le") != "f16le" or not isinstance(vector, bytes) or len(vector) != 2 * dims:
        return None
    return Embedding(model, digest, dims, vector)


@dataclass(frozen=True)
class ConfigRecord:
    active: ModelSpec
    next: ModelSpec | None
    document_prefix: str
    query_prefix: str
    record: dict[str, Any]  # JSON form, as getSpaceStatus shows it


def _model(value: Any) -> ModelSpec | None:
    if not isinstance(value, dict):
        return None
    model, digest, dims = value.get("model"), value.get("modelDigest"), value.get("dims")
    if (
        isinstance(model, str)
        and model
        and isinstance(digest, str)
        and digest
        and type(dims) is int
        and 0 < dims <= 16000
    ):
        return ModelSpec(model, digest, dims)
    return None


def config_from_record(value: Any) -> ConfigRecord | None:
    active = _model(value)
    if active is None:
        return None
    prefixes = [
        value.get(name) if isinstance(value.get(name), str) else ""
        for name in ("documentPrefix", "queryPrefix")
    ]
    return ConfigRecord(
        active, _model(value.get("next")), prefixes[0][:200], prefixes[1][:200], to_json(value)
    )
