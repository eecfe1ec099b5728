"""A readers-writer lock for asyncio (the standard library has none, and no maintained package is installed).

Many searches may read a `SpaceIndex` at once; applying a delta in place (FAISS `add`, tombstones) must run
alone. Writers are preferred so a steady stream of searches cannot starve an update.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class ReadWriteLock:
    def __init__(self) -> None:
        self._cond = asyncio.Condition()
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    def try_read(self) -> bool:
        """Take a read share at once if no writer holds or awaits the lock (the search hot path: no
        Condition round trip); pair with `release_read`. False: use `read()` and wait."""
        if self._writing or self._writers_waiting:
            return False
        self._readers += 1
        return True

    def release_read(self) -> None:
        """Give back a share taken by `try_read`; wakes a waiting writer when the last reader leaves."""
        self._readers -= 1
        if self._readers == 0 and self._writers_waiting:
            asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        async with self._cond:
            self._cond.notify_all()

    @asynccontextmanager
    async def read(self) -> AsyncIterator[None]:
        async with self._cond:
            await self._cond.wait_for(lambda: not self._writing and not self._writers_waiting)
            self._readers += 1
        try:
            yield
        finally:
            async with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @asynccontextmanager
    async def write(self) -> AsyncIterator[None]:
        async with self._cond:
            self._writers_waiting += 1
            try:
                await self._cond.wait_for(lambda: not self._writing and self._readers == 0)
            finally:
                self._writers_waiting -= 1
                self._cond.notify_all()  # a cancelled writer must release the readers it was holding back
            self._writing = True
        try:
            yield
        finally:
            async with self._cond:
                self._writing = False
                self._cond.notify_all()
