"""`KeywordIndexes`: the in-memory BM25 index of each recently searched space, caught up with the store.

Before each search the space's generation (read by the caller a moment ago) is compared with the index's;
a stale index first applies the store's delta (rows after its last row id, tombstones since its
generation), so keyword scores follow every write path (XRPC, import, sync, every shim) within one search.
A delta whose tombstones were pruned, or an index with more than a third dead rows, is rebuilt. Loads and
searches run in the worker pool; one asyncio lock per space keeps a catch-up from overlapping a search of
the same index. At most MAX_SPACES indexes are kept (least recently used go first).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np

from ..search.filters import Filters
from ..search.keyword_index import KeywordIndex
from ..search.rows import DeltaUnavailable
from ..store.keyword_rows import read_keyword_delta

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..context import AppContext
    from ..store import Space

MAX_SPACES = 16
REBUILD_DEAD_FRACTION = 1 / 3


class KeywordIndexes:
    def __init__(self, ctx: AppContext):
        self.ctx = ctx
        self._indexes: OrderedDict[str, KeywordIndex] = OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}

    async def search(
        self,
        space: Space,
        text: str,
        k: int,
        filters: Filters | None = None,
        within: Iterable[int] | None = None,
        also: Iterable[int] = (),
    ) -> tuple[dict[int, float], dict[int, float]]:
        """(row id -> BM25 score of the best `k` matches, scores of the matching rows of `also`); see
        KeywordIndex.search."""
        lock = self._locks.setdefault(_key(space), asyncio.Lock())
        async with lock:
            index = await self._fresh(space)
            row_ids, scores, also_scores = await self.ctx.pool.run(
                index.search, text, k, filters, within, also
            )
        best = dict(zip(row_ids.tolist(), np.asarray(scores, dtype=np.float64).tolist(), strict=True))
        return best, also_scores

    async def _fresh(self, space: Space) -> KeywordIndex:
        index = self._indexes.get(_key(space))
        if index is not None:
            self._indexes.move_to_end(_key(space))
            if index.generation >= space.generation:
                return index
            if index.dead <= len(index) * REBUILD_DEAD_FRACTION:
                try:
                    delta = await self.ctx.store.read(
                        read_keyword_delta, space.uri, index.last_row_id, index.generation
                    )
                except DeltaUnavailable:
                    delta = None
                if delta is not None:
                    await self.ctx.pool.run(_apply, index, delta)
                    return index
        index = KeywordIndex()
        delta = await self.ctx.store.read(read_keyword_delta, space.uri, 0, -1)
        await self.ctx.pool.run(_apply, index, delta)
        self._indexes[_key(space)] = index
        while len(self._indexes) > MAX_SPACES:
            evicted, _ = self._indexes.popitem(last=False)
            self._locks.pop(evicted, None)
        return index


def _key(space: Space) -> str:
    # A space deleted and created again under the same URI starts a new index.
    return f"{space.uri}#{space.created_at}"


def _apply(index: KeywordIndex, delta) -> None:
    index.remove(delta.deleted)
    index.add(delta.added)
    index.generation = delta.generation
