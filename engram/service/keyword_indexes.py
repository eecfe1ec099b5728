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

from ..search.filters import Filters
from ..search.keyword_index import KeywordIndex, KeywordResult
from ..search.rows import DeltaUnavailable
from ..store.keyword_rows import read_keyword_delta

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..store import Space
    from ..store.database import Store
    from ..workers import WorkerPool

MAX_SPACES = 16
REBUILD_DEAD_FRACTION = 1 / 3


class KeywordIndexes:
    def __init__(self, store: Store, pool: WorkerPool):
        self.store = store
        self.pool = pool
        self._indexes: OrderedDict[str, KeywordIndex] = OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}
        self._running: set[asyncio.Task] = set()

    async def search(
        self,
        space: Space,
        text: str,
        k: int,
        filters: Filters | None = None,
        within: Iterable[int] | None = None,
    ) -> KeywordResult:
        """The best `k` matches of `text` in the space, caught up with the store first (KeywordIndex.search)."""
        # Detached and shielded: a caller that gives up (the search's hard limit) must not release the lock
        # while a worker thread still changes the index, and a long first build should finish for the next
        # caller instead of starting over.
        task = asyncio.ensure_future(self._locked_search(space, text, k, filters, within))
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return await asyncio.shield(task)

    async def idf(self, space: Space, text: str) -> dict[str, float]:
        """The idf of each query term of `text` in the space (KeywordIndex.idf), caught up first."""
        task = asyncio.ensure_future(self._locked_idf(space, text))  # detached and shielded, as in search
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return await asyncio.shield(task)

    async def _locked_idf(self, space: Space, text: str) -> dict[str, float]:
        async with self._locks.setdefault(_key(space), asyncio.Lock()):
            index = await self._fresh(space)
            return await self.pool.run(index.idf, text)

    async def _locked_search(self, space, text, k, filters, within) -> KeywordResult:
        async with self._locks.setdefault(_key(space), asyncio.Lock()):
            index = await self._fresh(space)
            return await self.pool.run(index.search, text, k, filters, within)

    async def _fresh(self, space: Space) -> KeywordIndex:
        index = self._indexes.get(_key(space))
        if index is not None:
            self._indexes.move_to_end(_key(space))
            if index.generation >= space.generation:
                return index
            if index.dead <= len(index) * REBUILD_DEAD_FRACTION:
                try:
                    delta = await self.store.read(
                        read_keyword_delta, space.uri, index.last_row_id, index.generation
                    )
                except DeltaUnavailable:
                    delta = None
                if delta is not None:
                    await self.pool.run(_apply, index, delta)
                    return index
        index = KeywordIndex()
        delta = await self.store.read(read_keyword_delta, space.uri, 0, -1)
        await self.pool.run(_apply, index, delta)
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
