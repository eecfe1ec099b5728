"""The index cache's entries and their memory accounting (docs/internals.md#concurrency).

Accounting is incremental: a running byte total and an LRU order (an OrderedDict moved on touch), so a
load, touch, resize or eviction costs O(1) amortised however many indexes are loaded (10k+ small spaces).
What to do with an evicted index (save it when it changed) is the manager's business, not the cache's.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from engram.search.index import SpaceIndex
from engram.search.loader import LoadRequest
from engram.search.rwlock import ReadWriteLock

Key = tuple[str, str]  # (space uri, model key)


@dataclass
class Entry:
    index: SpaceIndex
    lock: ReadWriteLock = field(default_factory=ReadWriteLock)
    update: asyncio.Lock = field(default_factory=asyncio.Lock)  # one delta/rebuild at a time
    save: asyncio.Lock = field(default_factory=asyncio.Lock)
    refreshing: asyncio.Task[None] | None = None
    busy: int = 0
    nbytes: int = 0  # this index's share of IndexCache.bytes, as last accounted
    saved_generation: int = -1
    drops: int = 0  # the space's drop count when loaded; a later drop means "never save this again"
    batch: Any = None  # the last SearchBatch queued for this index (engram/search/search_job.py)


def saved_entry(index: SpaceIndex, request: LoadRequest) -> Entry:
    """Built on the load thread (its asyncio locks bind to the loop on first use, not here)."""
    return Entry(index, saved_generation=index.generation, drops=request.drops)


class IndexCache:
    def __init__(self, ram_bytes: int):
        self.ram_bytes = ram_bytes
        self.entries: OrderedDict[Key, Entry] = OrderedDict()  # least recently used first
        self.bytes = 0  # sum of entry.nbytes over entries
        self.slots: dict[str, set[str]] = {}  # space -> model keys loaded (prune checks without a scan)

    def touch(self, key: Key) -> None:
        if key in self.entries:
            self.entries.move_to_end(key)

    def install(self, key: Key, entry: Entry, nbytes: int | None = None) -> None:
        if key in self.entries:
            self.remove(key)
        entry.nbytes = entry.index.nbytes() if nbytes is None else nbytes
        self.entries[key] = entry
        self.bytes += entry.nbytes
        self.slots.setdefault(key[0], set()).add(key[1])

    def resize(self, key: Key, entry: Entry) -> bool:
        """Re-account an index whose size changed; False when it is no longer cached (evicted, dropped)."""
        if self.entries.get(key) is not entry:
            return False
        size = entry.index.nbytes()
        self.bytes += size - entry.nbytes
        entry.nbytes = size
        return True

    def remove(self, key: Key) -> Entry:
        entry = self.entries.pop(key)
        self.bytes -= entry.nbytes
        slots = self.slots.get(key[0])
        if slots is not None:
            slots.discard(key[1])
            if not slots:
                del self.slots[key[0]]
        return entry

    def over_budget(self, keep: Key) -> list[Key]:
        """Least recently used keys to evict to get under budget. Busy ones are skipped (they stay at the
        front and are met again next time), so the cost is the number evicted plus the number busy."""
        if self.bytes <= self.ram_bytes:
            return []
        victims = []
        excess = self.bytes - self.ram_bytes
        for key, entry in self.entries.items():
            if excess <= 0:
                break
            if key == keep or entry.busy or entry.update.locked():
                continue
            victims.append(key)
            excess -= entry.nbytes
        return victims
