"""`HitCache`: memories that recent searches returned, kept hydrated so the next search that hits them skips
the SQLite read and the row-to-`Memory` conversion (docs/internals.md#hit-cache).

Why caching is safe without invalidation: a row id names one immutable version of a memory. An update
deletes the old row and inserts a new one under a new row id, and ids are never reused (AUTOINCREMENT,
identity columns on PostgreSQL; engram/store/memory_writes.py). So a cached row is never out of date, only
possibly deleted. It is served only for a row id that the index has just returned for a search, and the
index answers as of the generation the caller read a moment before, so the row was live in that view: the
answer is the one the database read would have given at that generation. (A database read could drop a
row deleted in the microseconds after the index search; the cached read answers as of the index's
view instead, which is the view the rest of the answer is in anyway.)

Bounded by an estimate of the bytes held (least recently used out first), shared by the worker threads
that hydrate search hits, so every operation holds one lock for a few dictionary steps.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

from engram.store.models import Memory

_ROW_OVERHEAD = 600  # the Memory object, its tuple of tags, dict entries and the key tuple (measured ~560)


def _estimated_bytes(memory: Memory) -> int:
    return (
        _ROW_OVERHEAD
        + len(memory.text)
        + len(memory.uri)
        + len(memory.source or "")
        + 80 * len(memory.tags)
        + 120 * len(memory.attrs)
    )


class HitCache:
    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._rows: OrderedDict[tuple[int, int], tuple[Memory, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._rows)

    def hydrate(
        self, space_id: int, row_ids: Sequence[int], read: Callable[[list[int]], list[Memory]]
    ) -> list[Memory]:
        """The memories of `row_ids` in that order (ids `read` does not return are dropped, as the database
        read drops deleted rows): cached ones from memory, the rest through `read(missing_ids)`."""
        if self.max_bytes <= 0:
            return read(list(row_ids))
        found = self.cached(space_id, row_ids)
        missing = [row_id for row_id in row_ids if row_id not in found]
        if missing:
            fetched = read(missing)
            self.add(space_id, fetched)
            found.update((memory.row_id, memory) for memory in fetched)
        return [found[row_id] for row_id in row_ids if row_id in found]

    def cached(self, space_id: int, row_ids: Sequence[int]) -> dict[int, Memory]:
        """{row id: memory} of those of `row_ids` the cache holds (a few dictionary steps under the lock, so
        the event loop may ask: the engram ranking's pool, engram/service/ranking.py); the caller reads the
        rest and hands them to `add`. The same contract as `hydrate`: only for row ids a search has just
        returned for the space."""
        if self.max_bytes <= 0:
            return {}
        found: dict[int, Memory] = {}
        rows = self._rows
        with self._lock:
            for row_id in row_ids:
                cached = rows.get((space_id, row_id))
                if cached is not None:
                    rows.move_to_end((space_id, row_id))
                    found[row_id] = cached[0]
            self.hits += len(found)
        return found

    def add(self, space_id: int, memories: list[Memory]) -> None:
        """Cache memories just read for a search's row ids (counted as misses)."""
        if self.max_bytes <= 0:
            return
        rows = self._rows
        with self._lock:
            self.misses += len(memories)
            for memory in memories:
                key = (space_id, memory.row_id)
                if key in rows:
                    continue
                size = _estimated_bytes(memory)
                rows[key] = (memory, size)
                self.bytes += size
            while self.bytes > self.max_bytes and rows:
                _, (_, size) = rows.popitem(last=False)
                self.bytes -= size
