"""`IndexManager`: loads, caches, refreshes, persists, evicts and rebuilds per-space indexes.

- One load per (space, model key) however many callers ask (singleflight). A load runs as its own task, so
  it continues when its callers give up; a search waits at most `load_wait_s` for it, then gets 503
  `IndexLoading`.
- Before each search the store generation is compared with the index's (one cheap call); a stale index
  first applies the store's delta. Small deltas are applied in place under the write side of a
  readers-writer lock; big ones, index-kind switches and >20 % tombstones build a replacement off-lock
  (searches keep using the old index meanwhile) and swap it in.
- Work that must not be abandoned half-way (a search holding the read lock while FAISS runs in a worker
  thread, a delta being applied) runs in a detached task that the caller merely awaits through `shield`:
  cancelling the caller never releases a lock while a worker thread still uses the index.
- All FAISS/numpy work runs in the shared `WorkerPool`; the event loop only coordinates.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from engram.search import persist
from engram.search.filters import Filters
from engram.search.graph import Neighbors, newest_neighbors
from engram.search.index import IndexTuning, SearchResult, SpaceIndex
from engram.search.rows import DeltaUnavailable, IndexSource
from engram.search.rwlock import ReadWriteLock
from engram.workers import WorkerPool
from engram.xrpc.errors import InvalidRequestError, UnavailableError, XrpcError

log = logging.getLogger(__name__)
T = TypeVar("T")
Key = tuple[str, str]  # (space uri, model key)


@dataclass
class _Entry:
    index: SpaceIndex
    lock: ReadWriteLock = field(default_factory=ReadWriteLock)
    update: asyncio.Lock = field(default_factory=asyncio.Lock)  # one delta/rebuild at a time
    save: asyncio.Lock = field(default_factory=asyncio.Lock)
    refreshing: asyncio.Task | None = None
    last_used: float = field(default_factory=time.monotonic)
    busy: int = 0
    saved_generation: int = -1
    drops: int = 0  # the space's drop count when loaded; a later drop means "never save this again"


class IndexManager:
    def __init__(
        self,
        source: IndexSource,
        pool: WorkerPool,
        data_dir: Path | str | None,
        *,
        exact_max: int = 100_000,
        ram_bytes: int = 8 << 30,
        load_wait_s: float = 0.5,
        rerank_deadline_ms: float = 250.0,
        tuning: IndexTuning | None = None,
        maintenance_pool: WorkerPool | None = None,
    ):
        self.source = source
        self.pool = pool
        # Builds, compactions and file I/O can take seconds to minutes (an HNSW build at 200k+ rows): on a
        # pool of their own they never sit in front of searches in the search pool's queue.
        self.maintenance = maintenance_pool or pool
        self.data_dir = Path(data_dir) if data_dir is not None else None  # None: never persist
        self.tuning = tuning or IndexTuning(exact_max=exact_max)
        self.ram_bytes = ram_bytes
        self.load_wait_s = load_wait_s
        self.rerank_deadline_s = rerank_deadline_ms / 1000.0
        self._entries: dict[Key, _Entry] = {}
        self._loads: dict[Key, asyncio.Task] = {}
        self._dropped: dict[
            str, int
        ] = {}  # space -> drop count, so a load finishing after a drop is discarded
        self._background: set[asyncio.Task] = set()
        self.builds = 0  # full builds from the store (tests and metrics)
        self.disk_loads = 0
        self.evictions = 0

    # ----- public API ------------------------------------------------------------------------------

    async def search(
        self,
        space: str,
        model_key: str,
        dims: int,
        query: np.ndarray,
        k: int,
        filters: Filters | None = None,
        *,
        generation: int | None = None,
        then: Callable[[SearchResult], Any] | None = None,
    ) -> Any:
        """`generation`: the space's store generation if the caller just read it (saves a store round trip;
        the index then answers as of that generation or newer). `then(result)` runs in the same worker
        thread right after the search (hydrating hits there saves a thread hop); its value is returned."""
        entry = await self._entry(space, model_key, dims)
        if entry.index.dims != dims or query.shape[0] != dims:
            raise InvalidRequestError(
                f"query has {query.shape[0]} dimensions; the space's index has {entry.index.dims}",
                "ModelMismatch",
            )
        entry.last_used = time.monotonic()
        await self._fresh(entry, space, model_key, generation)
        entry.busy += 1
        # The re-rank budget starts once the index is ready: a load or delta is not the re-rank's fault.
        deadline = time.monotonic() + self.rerank_deadline_s
        task = self._detached(self._locked_search(entry, query, k, filters, deadline, then))
        return await asyncio.shield(task)

    async def graph(self, space: str, model_key: str, dims: int, limit: int, k: int) -> Neighbors:
        """Exact kNN among the space's newest `limit` live rows (getMemoryGraph), on a fresh index."""
        entry = await self._entry(space, model_key, dims)
        entry.last_used = time.monotonic()
        await self._fresh(entry, space, model_key)
        entry.busy += 1

        async def run() -> Neighbors:
            try:
                async with entry.lock.read():
                    return await self.pool.run(newest_neighbors, entry.index, limit, k)
            finally:
                entry.busy -= 1
                entry.last_used = time.monotonic()

        return await asyncio.shield(self._detached(run()))

    async def warm(self, space: str, model_key: str, dims: int) -> None:
        """Start loading (if not loaded or loading) and return at once."""
        key = (space, model_key)
        if key not in self._entries:
            self._start_load(key, dims)

    async def rebuild(self, space: str, model_key: str, dims: int | None = None) -> None:
        """Rebuild from the store (reindex) and persist; searches use the old index until the swap.

        When the index is not loaded and `dims` is unknown, its files are discarded so the next load builds."""
        key = (space, model_key)
        entry = self._entries.get(key)
        if entry is not None:
            await asyncio.shield(self._detached(self._rebuild(entry, key, entry.index.dims)))
        elif dims is not None:
            await self._start_load(key, dims, force_build=True)
        elif self.data_dir is not None:
            await self.maintenance.run(persist.remove, self.data_dir, space, model_key)

    async def drop(self, space: str) -> None:
        """Forget a deleted space: its loaded indexes, any load in flight, and its files."""
        self._dropped[space] = self._dropped.get(space, 0) + 1
        for key in [key for key in self._entries if key[0] == space]:
            entry = self._entries.pop(key)
            async with entry.save:  # let a save in flight finish so it cannot re-create files after removal
                pass
        if self.data_dir is not None:
            await self.maintenance.run(persist.remove, self.data_dir, space)

    async def flush(self) -> None:
        """Wait for background loads and saves (tests; shutdown)."""
        while self._background or self._loads:
            await asyncio.gather(*self._background, *self._loads.values(), return_exceptions=True)

    async def close(self) -> None:
        await self.flush()
        for key, entry in list(self._entries.items()):
            await self._save(entry, key)

    def loaded_bytes(self) -> int:
        return sum(entry.index.nbytes() for entry in self._entries.values())

    def loaded_index(self, space: str, model_key: str) -> SpaceIndex | None:
        """The loaded index object itself (benchmarks time bare searches on exactly what the service uses)."""
        entry = self._entries.get((space, model_key))
        return entry.index if entry is not None else None

    def is_loaded(self, space: str, model_key: str) -> bool:
        return (space, model_key) in self._entries

    # ----- loading ---------------------------------------------------------------------------------

    async def _entry(self, space: str, model_key: str, dims: int) -> _Entry:
        key = (space, model_key)
        entry = self._entries.get(key)
        if entry is not None:
            return entry
        load = self._start_load(key, dims)
        try:
            await asyncio.wait_for(asyncio.shield(load), timeout=self.load_wait_s)
        except TimeoutError:
            raise UnavailableError("the space's index is loading; retry shortly", "IndexLoading") from None
        return self._entries.get(key) or load.result()

    def _start_load(self, key: Key, dims: int, force_build: bool = False) -> asyncio.Task:
        load = self._loads.get(key)
        if load is None:
            load = self._detached(self._load(key, dims, force_build))
            self._loads[key] = load
            load.add_done_callback(lambda _: self._loads.pop(key, None))
        return load

    async def _load(self, key: Key, dims: int, force_build: bool) -> _Entry:
        space, model_key = key
        drops = self._dropped.get(space, 0)
        index = None
        if self.data_dir is not None and not force_build:
            index = await self.maintenance.run(
                persist.load, self.data_dir, space, model_key, dims, self.tuning
            )
        fresh_build = index is None
        if fresh_build:
            index = await self._build(space, model_key, dims)
        else:
            self.disk_loads += 1
            if index.needs_rebuild(0):  # saved under another exact_max, or heavy with tombstones
                index = await self.maintenance.run(index.compacted, None, index.generation)
        entry = _Entry(index, saved_generation=-1 if fresh_build else index.generation, drops=drops)
        if self._dropped.get(space, 0) != drops:
            return entry  # the space was deleted while loading: do not install it
        self._entries[key] = entry
        if fresh_build:
            self._detached(self._save(entry, key))
        self._evict(keep=key)
        return entry

    async def _build(self, space: str, model_key: str, dims: int) -> SpaceIndex:
        delta = await self.source.delta(space, model_key, 0, 0)
        self.builds += 1

        def build() -> SpaceIndex:
            index = SpaceIndex.build(delta.added, dims, delta.generation, self.tuning)
            index.delete(delta.deleted)
            return index

        return await self.maintenance.run(build)

    # ----- freshness -------------------------------------------------------------------------------

    async def _fresh(self, entry: _Entry, space: str, model_key: str, wanted: int | None = None) -> None:
        if wanted is None:
            wanted = await self.source.generation(space)
        for _ in range(3):  # bounded: a source whose delta lags the generation it reported must not spin us
            if entry.index.generation >= wanted:
                return
            if entry.refreshing is None or entry.refreshing.done():
                entry.refreshing = self._detached(self._refresh(entry, space, model_key))
            await asyncio.shield(entry.refreshing)
        if entry.index.generation < wanted:
            log.warning(
                "index for %s stays at generation %d < %d after refreshing",
                space,
                entry.index.generation,
                wanted,
            )

    async def _refresh(self, entry: _Entry, space: str, model_key: str) -> None:
        async with entry.update:
            index = entry.index
            try:
                delta = await self.source.delta(space, model_key, index.high_water, index.generation)
            except DeltaUnavailable:  # saved before the store pruned deletions it would need: start over
                entry.index = await self._build(space, model_key, index.dims)
                self._detached(self._save(entry, (space, model_key)))
                return
            if index.needs_rebuild(len(delta.added), len(delta.deleted)):
                entry.index = await self.maintenance.run(
                    index.compacted, delta.added, delta.generation, delta.deleted
                )
                self._detached(self._save(entry, (space, model_key)))
            else:
                async with entry.lock.write():
                    await self.pool.run(index.apply, delta.added, delta.deleted, delta.generation)

    async def _rebuild(self, entry: _Entry, key: Key, dims: int) -> None:
        async with entry.update:
            entry.index = await self._build(key[0], key[1], dims)
        await self._save(entry, key)

    # ----- searching, saving, evicting -------------------------------------------------------------

    async def _locked_search(
        self,
        entry: _Entry,
        query: np.ndarray,
        k: int,
        filters: Filters | None,
        deadline: float,
        then: Callable[[SearchResult], Any] | None = None,
    ) -> Any:
        def job() -> Any:
            result = entry.index.search(query, k, filters, deadline)
            return then(result) if then is not None else result

        try:
            async with entry.lock.read():
                return await self.pool.run(job)
        finally:
            entry.busy -= 1
            entry.last_used = time.monotonic()

    async def _save(self, entry: _Entry, key: Key) -> None:
        if self.data_dir is None:
            return
        async with entry.save, entry.lock.read():  # the read lock keeps in-place deltas out while serialising
            index = entry.index
            if index.generation == entry.saved_generation or self._dropped.get(key[0], 0) != entry.drops:
                return
            await self.maintenance.run(persist.save, index, self.data_dir, key[0], key[1])
            entry.saved_generation = index.generation
        await self._prune(key[0])

    async def _prune(self, space: str) -> None:
        """Let the store forget deletions every loaded index of the space has applied and saved; an older
        index file met later (another model slot, another process) gets DeltaUnavailable and rebuilds."""
        prune = getattr(self.source, "prune_tombstones", None)
        generations = [e.saved_generation for (s, _), e in self._entries.items() if s == space]
        if prune is None or not generations or min(generations) <= 0:
            return
        try:
            await prune(space, min(generations))
        except XrpcError:
            pass  # the space was deleted meanwhile: nothing left to prune

    def _evict(self, keep: Key) -> None:
        total = self.loaded_bytes()
        if total <= self.ram_bytes:
            return
        for key, entry in sorted(self._entries.items(), key=lambda item: item[1].last_used):
            if total <= self.ram_bytes:
                break
            if key == keep or entry.busy or entry.update.locked():
                continue
            del self._entries[key]
            self.evictions += 1
            total -= entry.index.nbytes()
            if entry.index.generation != entry.saved_generation:
                self._detached(self._save(entry, key))

    def _detached(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """A task that outlives its caller; its failure is logged rather than lost."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)

        def done(t: asyncio.Task) -> None:
            self._background.discard(t)
            exc = None if t.cancelled() else t.exception()
            if exc is not None and not isinstance(
                exc, XrpcError
            ):  # XRPC errors reach their caller as answers
                log.warning("index task failed: %r", exc)

        task.add_done_callback(done)
        return task
