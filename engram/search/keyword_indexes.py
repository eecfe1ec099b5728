"""`KeywordIndexes`: the in-memory BM25 index of each recently searched space, caught up with the store.

The keyword side of the `IndexManager` (engram/search/manager.py), which owns one and reads through the
same port, `IndexSource` (engram/search/rows.py): the same delta (rows after the last row id, tombstones
after the index's generation, with one tombstone boundary) and the same `DeltaUnavailable` when those were
pruned, and the manager's tombstone pruning keeps what a loaded keyword index still needs.

Before each search the space's generation (read by the caller a moment ago) is compared with the index's;
a stale index first applies the delta, so keyword scores follow every write path (XRPC, import, sync,
every shim) within one search. A delta whose tombstones were pruned, or an index with more than a third
dead rows, is rebuilt. Loads and searches run in the worker pool; one asyncio lock per space keeps a
catch-up from overlapping a search of the same index. An unfiltered annotation (a few lookups) runs on
the loop instead when the index is caught up and its lock free (`KeywordIndexes.annotate`). At most
MAX_SPACES indexes are kept (least recently used go first). Keyword indexes are never saved: a build
reads words, not vectors, and takes a second at 100k rows (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Protocol, TypeVar

from ..workers import WorkerPool
from .filters import Filters
from .keyword_index import Annotation, KeywordIndex, KeywordResult
from .rows import DeltaUnavailable, IndexSource, KeywordDelta

T = TypeVar("T")
MAX_SPACES = 16
REBUILD_DEAD_FRACTION = 1 / 3


class KeywordSpace(Protocol):
    """What a keyword search needs of a space (the store's `Space` is one): its URI, when it was created (a
    space deleted and created again under the same URI starts a new index) and its write generation as
    the caller just read it."""

    @property
    def uri(self) -> str: ...
    @property
    def created_at(self) -> Any: ...
    @property
    def generation(self) -> int: ...


def _key(space: KeywordSpace) -> str:
    return f"{space.uri}#{space.created_at}"


class KeywordIndexes:
    def __init__(self, source: IndexSource, pool: WorkerPool):
        self.source = source
        self.pool = pool
        self._indexes: OrderedDict[str, KeywordIndex] = OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}
        self._running: set[asyncio.Task[Any]] = set()

    async def search(
        self,
        space: KeywordSpace,
        text: str,
        k: int,
        filters: Filters | None = None,
        within: Iterable[int] | None = None,
    ) -> KeywordResult:
        """The best `k` matches of `text` in the space, caught up with the store first (KeywordIndex.search)."""
        # Detached and shielded: a caller that gives up (the search's hard limit) must not release the lock
        # while a worker thread still changes the index, and a long first build should finish for the next
        # caller instead of starting over.
        return await self._detached(self._locked(space, KeywordIndex.search, text, k, filters, within))

    async def idf(self, space: KeywordSpace, text: str) -> dict[str, float]:
        """The idf of each query term of `text` in the space (KeywordIndex.idf), caught up first."""
        return await self._detached(self._locked(space, KeywordIndex.idf, text))

    async def annotate(
        self, space: KeywordSpace, text: str, row_ids: list[int], names: list[str], filters: Filters | None
    ) -> Annotation:
        """KeywordIndex.annotate on the space's index, caught up first. Without filters it is a few
        dictionary and postings lookups for the hits returned (microseconds, like a point read), so on an
        index that is caught up and that no worker holds it runs right here on the loop: no thread hop
        (docs/benchmarks.md, "Hybrid against vector at 100k"). A filter's mask is a pass over every row:
        that goes to a worker, as does any catch-up."""
        if filters is None or filters.is_empty():
            index = self._idle(space)
            if index is not None:
                return index.annotate(text, row_ids, names, filters)
        return await self._detached(self._locked(space, KeywordIndex.annotate, text, row_ids, names, filters))

    async def with_attr(self, space: KeywordSpace, name: str, values: list[str]) -> dict[str, list[int]]:
        """KeywordIndex.with_attr on the space's index, caught up first."""
        return await self._detached(self._locked(space, KeywordIndex.with_attr, name, values))

    async def allowed_rows(self, space: KeywordSpace, row_ids: list[int], filters: Filters) -> list[int]:
        """KeywordIndex.allowed_rows on the space's index, caught up first."""
        return await self._detached(self._locked(space, KeywordIndex.allowed_rows, row_ids, filters))

    async def terms_of(
        self, space: KeywordSpace, text: str, row_ids: list[int]
    ) -> dict[int, dict[str, float]]:
        """KeywordIndex.terms_of on the space's index, caught up first."""
        return await self._detached(self._locked(space, KeywordIndex.terms_of, text, row_ids))

    def generations(self, space_uri: str) -> list[int]:
        """The generations of the loaded keyword indexes of a space (tombstones after them are still needed)."""
        prefix = f"{space_uri}#"
        return [index.generation for key, index in self._indexes.items() if key.startswith(prefix)]

    def drop(self, space_uri: str) -> None:
        """Forget a deleted space's keyword indexes."""
        prefix = f"{space_uri}#"
        for key in [key for key in self._indexes if key.startswith(prefix)]:
            del self._indexes[key]
            self._locks.pop(key, None)

    def _idle(self, space: KeywordSpace) -> KeywordIndex | None:
        """The space's index if it is caught up with the generation the caller read and no worker uses it
        (its lock is free): then a read on the loop, with no await before it returns, cannot overlap a
        change (the lock's holders are the only writers). None otherwise."""
        key = _key(space)
        index, lock = self._indexes.get(key), self._locks.get(key)
        if index is None or index.generation < space.generation or (lock is not None and lock.locked()):
            return None
        self._indexes.move_to_end(key)
        return index

    async def _detached(self, work: Coroutine[Any, Any, T]) -> T:
        task: asyncio.Task[T] = asyncio.ensure_future(work)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return await asyncio.shield(task)

    async def _locked(self, space: KeywordSpace, method: Callable[..., T], *args: Any) -> T:
        async with self._locks.setdefault(_key(space), asyncio.Lock()):
            index = await self._fresh(space)
            return await self.pool.run(method, index, *args)

    async def _fresh(self, space: KeywordSpace) -> KeywordIndex:
        index = self._indexes.get(_key(space))
        if index is not None:
            self._indexes.move_to_end(_key(space))
            if index.generation >= space.generation:
                return index
            if index.dead <= len(index) * REBUILD_DEAD_FRACTION:
                try:
                    delta = await self.source.keyword_delta(space.uri, index.last_row_id, index.generation)
                except DeltaUnavailable:
                    delta = None
                if delta is not None:
                    await self.pool.run(_apply, index, delta)
                    return index
        index = KeywordIndex()
        await self.pool.run(_apply, index, await self.source.keyword_delta(space.uri, 0, 0))
        self._indexes[_key(space)] = index
        while len(self._indexes) > MAX_SPACES:
            evicted, _ = self._indexes.popitem(last=False)
            self._locks.pop(evicted, None)
        return index


def _apply(index: KeywordIndex, delta: KeywordDelta) -> None:
    index.remove(delta.deleted)
    index.add(delta.added)
    index.generation = delta.generation
