"""`ChangeCounter`: a number in shared memory that every process writing the SQLite file bumps after each
write transaction, so readers can tell in a fraction of a microsecond, without a system call, that nothing
was committed since they last read (docs/internals.md#space-cache).

Why not ask SQLite (`PRAGMA data_version`): on the event loop every SQLite call releases the GIL, and
getting it back can mean waiting for a worker thread's Python to finish; the per-request space read was the
last such call on the search path. A memory read never lets go of the GIL.

The counter lives in `<database>-changes` next to the file (like SQLite's own `-wal` and `-shm`), mapped by
every process that opens the store. A bump is read-increment-write under an exclusive `flock`, so two
processes committing at once both count. Readers must read the counter *before* the data they cache with it:
a commit that lands between the two then shows as a changed counter on the next look, never as a stale hit.
The bump happens after COMMIT and before the write is acknowledged, so a request that starts after an
acknowledgement sees the new value.

`keys_value()` is the count less this process's own commits of space-scoped writes only (`write_to`: a
space's memories, tombstones, generation, repo; never keys, revocations or a space's existence). The API-key
and revocation lookups are cached against it (engram/store/point_cache.py), so under a memory-write load
they are not read again after every commit. Any other process's commit still moves it: a process cannot
tell what another one wrote, so it counts everything it did not do itself. It never goes back: the
process's own scoped bumps are counted together with the shared count, under one thread lock.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import threading
from pathlib import Path
from typing import Protocol

_SIZE = 8
_MASK = (1 << 64) - 1


def counter_path(database: Path) -> Path:
    return database.with_name(database.name + "-changes")


class Changes(Protocol):
    """What the store asks of a change counter: this file's `ChangeCounter` on SQLite, the LISTEN-fed
    `PgChangeFeed` on PostgreSQL (engram/store/postgres/changes.py)."""

    def value(self) -> int: ...
    def keys_value(self) -> int: ...
    def bump(self, *, scoped: bool = False) -> None: ...
    def close(self) -> None: ...


class ChangeCounter:
    def __init__(self, path: Path, mode: int = 0o600):
        """`mode`: permissions if the file is created (the store passes its database file's, as SQLite does
        for `-wal` and `-shm`, so whoever may write the database may open the counter)."""
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, mode)
        try:
            if os.fstat(self._fd).st_size < _SIZE:
                os.ftruncate(self._fd, _SIZE)  # zero-filled; two processes doing this at once agree
            self._map = mmap.mmap(self._fd, _SIZE)
        except BaseException:
            os.close(self._fd)
            raise
        self._own_scoped = 0  # this process's bumps for commits of space-scoped writes only
        self._lock = threading.Lock()  # a bump and its scoped count are seen together or not at all

    def value(self) -> int:
        """The current count; -1 once closed (callers then read the database instead of trusting a cache)."""
        try:
            return int.from_bytes(self._map[:_SIZE], "little")
        except ValueError:  # the map is closed
            return -1

    def keys_value(self) -> int:
        """The count without this process's scoped-only commits; -1 once closed (see the module doc)."""
        with self._lock:
            value = self.value()
            return -1 if value < 0 else (value - self._own_scoped) & _MASK

    def bump(self, *, scoped: bool = False) -> None:
        """`scoped`: the commit held only space-scoped writes (`Store.write_to`)."""
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            with self._lock:
                self._map[:_SIZE] = ((self.value() + 1) & _MASK).to_bytes(_SIZE, "little")
                if scoped:
                    self._own_scoped += 1
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if not self._map.closed:
            self._map.close()
            os.close(self._fd)
