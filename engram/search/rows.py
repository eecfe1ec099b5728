"""What the store hands the index: rows of one space and one model slot, plus what changed since.

Row ids are the store's integer primary keys: they only ever grow, and an updated memory gets a new row id
(the old one is deleted), so "rows after id X" plus "rows deleted since generation G" is a complete delta.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np


@dataclass
class IndexRows:
    row_ids: np.ndarray  # int64 [n], ascending
    vectors: np.ndarray  # float16 [n, dims], as stored (not necessarily unit length)
    authors: list[str]  # DID per row
    created_at: np.ndarray  # int64 [n], milliseconds since the epoch (UTC)
    tags: list[tuple[str, ...]] = field(default_factory=list)  # per row
    attrs: list[dict[str, Any] | None] = field(default_factory=list)  # per row (or empty: none has any)

    def __len__(self) -> int:
        return int(self.row_ids.shape[0])


@dataclass
class IndexDelta:
    generation: int  # the space's write generation this delta brings the index up to
    added: IndexRows  # live rows with row_id > the caller's high-water mark
    deleted: np.ndarray  # int64 row ids deleted after the caller's generation


@dataclass(frozen=True)
class KeywordDelta:
    """The same delta for a keyword index (engram/search/keyword_index.py): rows with their words."""

    generation: int
    # row_id, author, created_ms, tags, text, source, attrs
    added: list[tuple[int, str, int, tuple[str, ...], str, str | None, dict[str, Any] | None]]
    deleted: list[int]


class DeltaUnavailable(Exception):
    """The store pruned tombstones the caller would need: rebuild from `delta(space, key, 0, 0)` instead."""


class IndexSource(Protocol):
    """Implemented by the store (engram/store); consumed by the index manager (engram/search)."""

    async def generation(self, space: str) -> int:
        """The space's write generation: bumped by every committed write batch or delete."""

    async def delta(self, space: str, model_key: str, after_row_id: int, since_generation: int) -> IndexDelta:
        """Rows of `model_key` added after `after_row_id`, and row ids deleted after `since_generation`.

        `after_row_id=0, since_generation=0` returns every live row (a full build). Raises
        `DeltaUnavailable` when tombstones after `since_generation` were already pruned."""

    async def keyword_delta(self, space: str, after_row_id: int, since_generation: int) -> KeywordDelta:
        """The same delta for the keyword index (every live row, whatever its model), with the same
        tombstone boundary and `DeltaUnavailable`."""

    async def prune_tombstones(self, space: str, through_generation: int) -> int:
        """Forget deletions at or below `through_generation` (every index that needs them has them)."""
