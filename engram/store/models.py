"""The store's value types: what repositories take and return (no SQL, no I/O)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def model_key(model: str, digest: str, dims: int) -> str:
    """The one spelling of "vectors of this model build": index files and rows are keyed by it."""
    return f"{model}@{digest}/{dims}"


@dataclass(frozen=True)
class ModelSpec:
    model: str
    digest: str
    dims: int

    @property
    def key(self) -> str:
        return model_key(self.model, self.digest, self.dims)


@dataclass(frozen=True)
class SpaceConfig:
    active: ModelSpec
    document_prefix: str = ""
    query_prefix: str = ""
    next: ModelSpec | None = None
    updated_at: str | None = None
    record: dict[str, Any] | None = None  # the config record as last seen (getSpaceStatus.config)


@dataclass(frozen=True)
class Space:
    id: int
    uri: str
    authority: str
    skey: str
    kind: str  # 'hosted' | 'synced'
    created_at: str
    deleted_at: str | None
    generation: int
    config: SpaceConfig | None

    @property
    def deleted(self) -> bool:
        return self.deleted_at is not None


@dataclass(frozen=True)
class Embedding:
    """A garden.engram embedding: `vector` is an array (any float dtype) or raw little-endian f16 bytes."""

    model: str
    model_digest: str
    dims: int
    vector: np.ndarray | bytes

    @property
    def key(self) -> str:
        return model_key(self.model, self.model_digest, self.dims)


@dataclass
class MemoryWrite:
    author: str
    text: str
    rkey: str | None = None  # None: a new TID (or the rkey an earlier import stored for idempotency_key)
    tags: Sequence[str] = ()
    source: str | None = None
    created_at: str | None = None  # ISO 8601 with timezone; None: now
    attrs: dict[str, Any] | None = None
    embedding: Embedding | None = None
    next_embedding: Embedding | None = None
    idempotency_key: str | None = None
    cid: str | None = None  # synced records: the CID from the author's repo (verified by sync); else computed


@dataclass(frozen=True)
class MemoryRecord:
    """The outcome of one write: `status` is 'created', 'updated' or 'unchanged'."""

    uri: str
    cid: str
    row_id: int
    author: str
    rkey: str
    indexed: bool  # carries a vector of the space's active model
    status: str


@dataclass(frozen=True)
class Memory:
    row_id: int
    uri: str
    cid: str
    author: str
    rkey: str
    text: str
    tags: tuple[str, ...]
    source: str | None
    attrs: dict[str, Any]
    created_at: str
    created_ms: int
    indexed_at: str
    model_key: str | None
    vector: bytes | None = None  # only filled by the export iterator
    next_model_key: str | None = None
    next_vector: bytes | None = None


@dataclass(frozen=True)
class SpaceStatus:
    space: Space
    memories: int
    skipped: list[tuple[str, int]]  # (author, count), sorted by author
    building_memories: int  # memories already carrying a vector for config.next
    skipped_reasons: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ApiKey:
    id: int
    space_uri: str
    scopes: frozenset[str]
    label: str
    created_at: str
    revoked_at: str | None
    # Every space the key may use, the primary included: short id (the space's row id, stable) -> URI.
    spaces: dict[str, str] = field(default_factory=dict)
