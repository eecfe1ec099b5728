"""`WriterLock`: the processes writing one SQLite file take turns through a blocking `flock` on
`<database>-writer`, held from before `BEGIN IMMEDIATE` until the transaction ends
(docs/internals.md#writes-from-several-processes).

Why not leave it to SQLite: a writer that finds the file locked waits in SQLite's busy handler, which
sleeps and looks again, backing off up to 100 ms a look. With several serving processes each running group
commits back to back, a waiting writer mostly sleeps through the moments the lock is free, and p99 grew to
seconds. A blocked `flock` is woken by the kernel the moment the holder lets go, with the GIL released
while it waits. SQLite's own lock still guards the file: a writer that does not take this lock (an older
engram, the sqlite3 shell) is waited for by the busy handler as before.

The lock is released when the holder's file descriptor closes, so a process that dies (kill -9) never
leaves it held.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


def writer_lock_path(database: Path) -> Path:
    return database.with_name(database.name + "-writer")


class WriterLock:
    def __init__(self, path: Path, mode: int = 0o600):
        """`mode`: permissions if the file is created (the store passes its database file's)."""
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, mode)
        self._held = False

    def acquire(self) -> None:
        """Block until no other process's writer holds the lock (a no-op if this one already does)."""
        if not self._held:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # releases a lock still held
            self._fd = -1
            self._held = False
