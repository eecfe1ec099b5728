"""`IndexManager`: loads, caches, refreshes, persists, evicts and rebuilds per-space indexes.

- One load per (space, model key) however many callers ask (singleflight). A load runs as its own task, so
  it continues when its callers give up; a search waits at most `load_wait_s` for it, then gets 503
  `IndexLoading`.
- Before each search the store generation is compared with the index's (one cheap call); a stale index
  first applies the store's delta. Small deltas are applied in place under the write side of a
  readers-writer lock; big ones, index-kind switches and >20 % tombstones build a replacement off-lock
  (searches keep using the old index meanwhile) and swap it in.
- Work that must not be abandoned half-way (a search holding the read lock while FAISS runs in a worker
  thread, a delta being applied) never gives its lock back while a worker thread still uses the index. A
  search on an uncontended index takes its read share synchronously and gives it back from the worker
  future's done callback (no task, no shield); otherwise, and for deltas, the work runs in a detached task
  that the caller merely awaits through `shield`.
- All FAISS/numpy work runs in worker pools; the event loop only coordinates. Searches use the search pool;
  disk loads, small builds and saves use a load pool of several threads (cold loads of different spaces run
  in parallel); big HNSW builds and compactions use the maintenance pool. A warm search therefore never
  queues behind another space's load.
- Loads of saved index files go through `SavedIndexLoader` (engram/search/loader.py): no task or executor
  job per load, finished loads adopted on the loop in batches, and loads wait (bounded) while warm searches
  are in flight, so thousands of loads cost the loop little and do not take the GIL from a warm search.
- Memory accounting is incremental (engram/search/cache.py): a load, touch or eviction costs O(1)
  amortised however many indexes are loaded (10k+ small spaces).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from engram.config_sections import SearchConfig
from engram.errors import EngramError, InvalidInput, Unavailable, UnknownSpace
from engram.search import persist
from engram.search.cache import Entry, IndexCache, saved_entry
from engram.search.filters import Filters
from engram.search.graph import Neighbors, newest_neighbors
from engram.search.index import IndexTuning, SearchResult, SpaceIndex
from engram.search.keyword_indexes import KeywordIndexes
from engram.search.loader import LoadOutcome, LoadRequest, SavedIndexLoader
from engram.search.rows import DeltaUnavailable, IndexSource
from engram.search.search_job import BatchStats, search_job, start_search
from engram.search.snapshot_sync import SnapshotStats, SnapshotSync
from engram.workers import WorkerPool

log = logging.getLogger(__name__)
T = TypeVar("T")
Key = tuple[str, str]  # (space uri, model key)


class IndexManager:
    def __init__(
        self,
        source: IndexSource,
        pool: WorkerPool,
        data_dir: Path | str | None,
        config: SearchConfig,
        *,
        tuning: IndexTuning | None = None,
        maintenance_pool: WorkerPool | None = None,
        load_pool: WorkerPool | None = None,
        shutdown_save_s: float = 10.0,
        snapshots: SnapshotSync | None = None,
        load_yield_s: float = 0.005,
    ):
        self.source = source
        self.pool = pool
        # The keyword (BM25) indexes, read through the same source (engram/search/keyword_indexes.py).
        self.keywords = KeywordIndexes(source, pool)
        self.batch_stats = BatchStats()  # search batches (engram/search/search_job.py), on /metrics
        # Builds, compactions and file I/O can take seconds to minutes (an HNSW build at 200k+ rows): on a
        # pool of their own they never sit in front of searches in the search pool's queue.
        self.maintenance = maintenance_pool or pool
        # Disk loads, builds of exact-sized spaces and saves: cheap, many, and worth running side by side.
        self.loads = load_pool or self.maintenance
        self.shutdown_save_s = shutdown_save_s
        self.data_dir = Path(data_dir) if data_dir is not None else None  # None: never persist
        self.snapshots = snapshots if self.data_dir is not None else None  # ENGRAM_INDEX_STORE
        # ENGRAM_EXACT_MAX, ENGRAM_LOAD_WAIT_MS, ENGRAM_RERANK_DEADLINE_MS, ENGRAM_RAM_BYTES: config's values
        self.tuning = tuning or IndexTuning(exact_max=config.exact_max)
        self.load_wait_s = config.load_wait_ms / 1000
        self.rerank_deadline_s = config.rerank_deadline_ms / 1000.0
        # a lone exact search of this many rows or more may split its scan (engram/search/split_scan.py); 0: never
        self.split_min_rows = config.split_min_rows
        self._cache = IndexCache(config.ram_bytes)
        self._entries = self._cache.entries  # least recently used first
        self._slots = self._cache.slots  # space -> model keys loaded
        self._loads: dict[Key, asyncio.Future[Entry]] = {}  # a task, or the saved-file loader's future
        # space -> drop count, so a load finishing after a drop is discarded
        self._dropped: dict[str, int] = {}
        self._background: set[asyncio.Task[Any]] = set()
        # Loads of saved index files: drained back to back by the load pool, adopted on the loop in batches;
        # `load_yield_s`: how long a load (or adopting finished ones) waits at most for warm searches.
        self._saved = SavedIndexLoader(
            self.loads, self.data_dir, self.tuning, prepare=saved_entry, install=self._install_saved,
            carry_on=self._carry_on, yield_s=load_yield_s,
        )  # fmt: skip
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
            raise InvalidInput(
                f"query has {query.shape[0]} dimensions; the space's index has {entry.index.dims}",
                "ModelMismatch",
            )
        self._cache.touch((space, model_key))
        with self._saved.searching():  # a warm search from here on: saved-index loads wait while it runs
            return await self._warm_search(entry, space, model_key, query, k, filters, generation, then)

    async def _warm_search(
        self,
        entry: Entry,
        space: str,
        model_key: str,
        query: np.ndarray,
        k: int,
        filters: Filters | None,
        generation: int | None,
        then: Callable[[SearchResult], Any] | None,
    ) -> Any:
        """The rest of `search` once the index is loaded (same arguments)."""
        await self._fresh(entry, space, model_key, generation)
        entry.busy += 1
        # The re-rank budget starts once the index is ready: a load or delta is not the re-rank's fault.
        deadline = time.monotonic() + self.rerank_deadline_s
        if not entry.lock.try_read():  # a delta holds or awaits the lock: queue behind it, the careful way
            task = self._detached(self._locked_search(entry, query, k, filters, deadline, then))
            return await asyncio.shield(task)
        # The hot path (engram/search/search_job.py): the read share is given back on the loop by the report.
        return await start_search(
            self.pool, self.batch_stats, entry, query, k, filters, deadline, then, self.split_min_rows
        )

    async def graph(self, space: str, model_key: str, dims: int, limit: int, k: int) -> Neighbors:
        """Exact kNN among the space's newest `limit` live rows (getMemoryGraph), on a fresh index."""
        entry = await self._entry(space, model_key, dims)
        self._cache.touch((space, model_key))
        await self._fresh(entry, space, model_key)
        entry.busy += 1

        async def run() -> Neighbors:
            try:
                async with entry.lock.read():
                    return await self.pool.run(newest_neighbors, entry.index, limit, k)
            finally:
                entry.busy -= 1

        return await asyncio.shield(self._detached(run()))

    async def warm(self, space: str, model_key: str, dims: int) -> None:
        """Start loading (if not loaded or loading) and return at once."""
        key = (space, model_key)
        if key not in self._entries:
            self._start_load(key, dims)

    async def catch_up(self, space: str) -> None:
        """Apply the store's delta to the loaded indexes of `space` now (cluster: another node committed a
        write to it, docs/scale-out.md#writes-from-any-node), so the next search does not wait for it."""
        for model_key in list(self._slots.get(space, ())):
            entry = self._entries.get((space, model_key))
            if entry is not None:
                await self._fresh(entry, space, model_key)

    async def unload(self, space: str) -> None:
        """Save and forget the loaded indexes of `space`, keeping its files (cluster: another node serves it
        now and loads the files this leaves behind)."""
        for model_key in list(self._slots.get(space, ())):
            key = (space, model_key)
            entry = self._cache.remove(key)
            await self._save(entry, key)

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
            await self.loads.run(persist.remove, self.data_dir, space, model_key)
            if self.snapshots is not None:  # else the next load would fetch the snapshot instead of building
                await self.snapshots.remove(space, model_key)

    async def drop(self, space: str) -> None:
        """Forget a deleted space: its loaded indexes, any load in flight, and its files."""
        self._dropped[space] = self._dropped.get(space, 0) + 1
        self.keywords.drop(space)
        for key in [key for key in self._entries if key[0] == space]:
            entry = self._cache.remove(key)
            async with entry.save:  # let a save in flight finish so it cannot re-create files after removal
                pass
        if self.data_dir is not None:
            await self.loads.run(persist.remove, self.data_dir, space)
        if self.snapshots is not None:  # in the background: a slow object store must not hold up the delete
            self._detached(self.snapshots.remove(space))

    async def flush(self) -> None:
        """Wait for background loads and saves (tests; shutdown)."""
        while self._background or self._loads:
            await asyncio.gather(*self._background, *self._loads.values(), return_exceptions=True)

    async def close(self) -> None:
        """Save every changed index, in parallel on the load pool, within `shutdown_save_s`: a save cut off
        by the bound leaves the previous files (or none), and that index is rebuilt from the store later."""
        await self.flush()
        saves = [
            asyncio.ensure_future(self._save(entry, key))
            for key, entry in self._entries.items()
            if entry.index.generation != entry.saved_generation
        ]
        if not saves:
            return
        done, pending = await asyncio.wait(saves, timeout=self.shutdown_save_s)
        for task in pending:
            task.cancel()
        if pending:
            log.warning("shutdown: %d index saves cut off after %.1f s", len(pending), self.shutdown_save_s)
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                log.warning("shutdown: index save failed: %r", task.exception())
        if self.snapshots is not None and self._background:  # the uploads those saves started
            await asyncio.wait(list(self._background), timeout=self.shutdown_save_s)

    @property
    def ram_bytes(self) -> int:
        return self._cache.ram_bytes

    @ram_bytes.setter
    def ram_bytes(self, budget: int) -> None:
        self._cache.ram_bytes = budget

    def loaded_bytes(self) -> int:
        return self._cache.bytes

    def loaded_count(self) -> int:
        return len(self._entries)

    def loaded_index(self, space: str, model_key: str) -> SpaceIndex | None:
        """The loaded index object itself (benchmarks time bare searches on exactly what the service uses)."""
        entry = self._entries.get((space, model_key))
        return entry.index if entry is not None else None

    def is_loaded(self, space: str, model_key: str) -> bool:
        return (space, model_key) in self._entries

    def snapshot_stats(self) -> SnapshotStats | None:
        return self.snapshots.stats if self.snapshots is not None else None

    # ----- loading ---------------------------------------------------------------------------------

    async def _entry(self, space: str, model_key: str, dims: int) -> Entry:
        key = (space, model_key)
        entry = self._entries.get(key)
        if entry is not None:
            return entry
        load = self._start_load(key, dims)
        try:
            await asyncio.wait_for(asyncio.shield(load), timeout=self.load_wait_s)
        except TimeoutError:
            raise Unavailable(
                "the space's index is loading; retry shortly", "IndexLoading", retry_after=1
            ) from None
        return self._entries.get(key) or load.result()

    def _start_load(self, key: Key, dims: int, force_build: bool = False) -> asyncio.Future[Entry]:
        load = self._loads.get(key)
        if load is None or load.cancelled():  # cancelled: a flush() that gave up took it down with it
            drops = self._dropped.get(key[0], 0)
            if self.data_dir is None or force_build:
                load = self._detached(self._load(key, dims, drops))
            elif self.snapshots is not None:
                load = self._detached(self._load_shared(key, dims, drops))
            else:
                load = self._saved.request(key, dims, drops)
            self._loads[key] = load
            load.add_done_callback(lambda done: self._load_done(key, done))
        return load

    def _load_done(self, key: Key, load: asyncio.Future[Entry]) -> None:
        if self._loads.get(key) is load:
            del self._loads[key]
        if not load.cancelled():
            load.exception()  # retrieved: a failure is logged by its task, not again as "never retrieved"

    def _install_saved(self, outcome: LoadOutcome) -> Entry:
        """On the loop: a saved index a load thread read (and built the cache entry of) goes into the cache."""
        key = outcome.request.key
        entry: Entry = outcome.prepared  # made by `saved_entry` on the load thread
        self.disk_loads += 1
        if self._dropped.get(key[0], 0) == outcome.request.drops:  # else deleted while loading: discard
            self._cache.install(key, entry, outcome.nbytes)
            self._evict(keep=key)
        return entry

    def _carry_on(self, request: LoadRequest, index: SpaceIndex | None) -> asyncio.Task[Entry]:
        return self._detached(self._load(request.key, request.dims, request.drops, index))

    async def _load(self, key: Key, dims: int, drops: int, index: SpaceIndex | None = None) -> Entry:
        """A load that builds from the store (`index` None: no data dir, a forced rebuild, no usable saved
        file) or compacts a saved index that needs it."""
        space, model_key = key
        fresh_build = index is None
        if index is None:
            index = await self._build(space, model_key, dims)
        else:
            self.disk_loads += 1
            if index.needs_rebuild(0):  # saved under another exact_max, or heavy with tombstones
                index = await self._pool_for(len(index)).run(index.compacted, None, index.generation)
        entry = Entry(index, saved_generation=-1 if fresh_build else index.generation, drops=drops)
        if self._dropped.get(space, 0) != drops:
            return entry  # the space was deleted while loading: do not install it
        self._cache.install(key, entry)
        if fresh_build:
            self._detached(self._save(entry, key))
        elif self.snapshots is not None and self.snapshots.behind(space, model_key):
            self._detached(self.snapshots.upload(space, model_key))
        self._evict(keep=key)
        return entry

    async def _load_shared(self, key: Key, dims: int, drops: int) -> Entry:
        """A cold load with a shared snapshot store (docs/scale-out.md#index-snapshots): a newer snapshot is
        fetched first (network I/O, so a task of its own rather than the batched saved-file loader, whose
        threads never wait on a network); without one the local file goes through that loader as usual."""
        index = await self._snapshot(*key, dims)
        if index is not None:
            return await self._load(key, dims, drops, index)
        entry: Entry = await self._saved.request(key, dims, drops)
        if self.snapshots is not None and self.snapshots.behind(*key):
            self._detached(self.snapshots.upload(*key))
        return entry

    async def _snapshot(self, space: str, model_key: str, dims: int) -> SpaceIndex | None:
        """The shared store's snapshot when it is newer than the local file (engram/search/snapshot_sync.py)."""
        if self.snapshots is None:
            return None
        generation = await self.source.generation(space)
        return await self.snapshots.fetch(space, model_key, dims, self.tuning, generation)

    async def _build(self, space: str, model_key: str, dims: int) -> SpaceIndex:
        delta = await self.source.delta(space, model_key, 0, 0)
        self.builds += 1

        def build() -> SpaceIndex:
            index = SpaceIndex.build(delta.added, dims, delta.generation, self.tuning)
            index.delete(delta.deleted)
            return index

        return await self._pool_for(len(delta.added)).run(build)

    def _pool_for(self, rows: int) -> WorkerPool:
        """Exact-sized work on the parallel load pool; HNSW builds (minutes at 200k+) on the maintenance pool."""
        return self.maintenance if rows > self.tuning.exact_max else self.loads

    # ----- freshness -------------------------------------------------------------------------------

    async def _fresh(self, entry: Entry, space: str, model_key: str, wanted: int | None = None) -> None:
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

    async def _refresh(self, entry: Entry, space: str, model_key: str) -> None:
        async with entry.update:
            index = entry.index
            try:
                delta = await self.source.delta(space, model_key, index.high_water, index.generation)
            except DeltaUnavailable:  # saved before the store pruned deletions it would need: start over
                entry.index = await self._build(space, model_key, index.dims)
                self._resized((space, model_key), entry)
                self._detached(self._save(entry, (space, model_key)))
                return
            if index.needs_rebuild(len(delta.added), len(delta.deleted)):
                entry.index = await self._pool_for(len(index) + len(delta.added)).run(
                    index.compacted, delta.added, delta.generation, delta.deleted
                )
                self._detached(self._save(entry, (space, model_key)))
            else:
                async with entry.lock.write():
                    await self.pool.run(index.apply, delta.added, delta.deleted, delta.generation)
            self._resized((space, model_key), entry)

    async def _rebuild(self, entry: Entry, key: Key, dims: int) -> None:
        async with entry.update:
            entry.index = await self._build(key[0], key[1], dims)
            self._resized(key, entry)
        await self._save(entry, key)

    # ----- searching, saving, evicting -------------------------------------------------------------

    async def _locked_search(
        self,
        entry: Entry,
        query: np.ndarray,
        k: int,
        filters: Filters | None,
        deadline: float,
        then: Callable[[SearchResult], Any] | None = None,
    ) -> Any:
        try:
            async with entry.lock.read():
                return await self.pool.run(search_job, entry.index, query, k, filters, deadline, then)
        finally:
            entry.busy -= 1

    async def _save(self, entry: Entry, key: Key) -> None:
        if self.data_dir is None:
            return
        async with entry.save, entry.lock.read():  # the read lock keeps in-place deltas out while serialising
            index = entry.index
            if index.generation == entry.saved_generation or self._dropped.get(key[0], 0) != entry.drops:
                return
            await self._pool_for(len(index)).run(persist.save, index, self.data_dir, key[0], key[1])
            entry.saved_generation = index.generation
            if self.snapshots is not None:  # off the request path; a failure waits for the next save
                self._detached(self.snapshots.upload(key[0], key[1]))
        await self._prune(key[0])

    async def _prune(self, space: str) -> None:
        """Let the store forget deletions every loaded index of the space has applied and saved, and every
        loaded keyword index has applied; an older index file met later (another model slot, another
        process) gets DeltaUnavailable and rebuilds."""
        generations = [self._entries[(space, m)].saved_generation for m in self._slots.get(space, ())]
        if not generations or min(generations) <= 0:
            return
        through = min(generations + self.keywords.generations(space))
        if through <= 0:
            return
        with contextlib.suppress(UnknownSpace):  # the space was deleted meanwhile: nothing left to prune
            await self.source.prune_tombstones(space, through)

    # ----- accounting (engram/search/cache.py) ----------------------------------------------------

    def _resized(self, key: Key, entry: Entry) -> None:
        """Re-account an index whose size changed (delta applied, compacted, rebuilt)."""
        if self._cache.resize(key, entry):
            self._evict(keep=key)

    def _evict(self, keep: Key) -> None:
        """Evict least recently used indexes until under budget; a changed one is saved first."""
        for key in self._cache.over_budget(keep):
            entry = self._cache.remove(key)
            self.evictions += 1
            if entry.index.generation != entry.saved_generation:
                self._detached(self._save(entry, key))

    def _detached(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """A task that outlives its caller; its failure is logged rather than lost."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)

        def done(t: asyncio.Task[T]) -> None:
            self._background.discard(t)
            exc = None if t.cancelled() else t.exception()
            if exc is not None and not isinstance(exc, EngramError):  # domain errors reach their callers
                log.warning("index task failed: %r", exc)

        task.add_done_callback(done)
        return task
