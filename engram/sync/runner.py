"""The per-space sync loop: at most one pass per space at a time, and a follow-up flag instead of a queue.

A request while a pass runs only marks what is owed (a full pass, or some repos); when the pass ends the
runner goes round once more for whatever was marked. However many notifications arrive, a space costs one
task and a bounded set of repo names.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

log = logging.getLogger("engram.sync")

PassFn = Callable[[bool, dict[str, str | None]], Awaitable[bool]]  # (full, repos) -> run a full pass next?


class SpaceRunner:
    def __init__(self, uri: str, run_pass: PassFn):
        self.uri = uri
        self._run_pass = run_pass
        self._full = False
        self._repos: dict[str, str | None] = {}
        self._task: asyncio.Task | None = None
        self.owed_since: float | None = None  # when the oldest unserved request arrived (lag)
        self.passes = 0

    def request(self, *, full: bool = False, repos: dict[str, str | None] | None = None) -> None:
        self._full = self._full or full
        for repo, rev in (repos or {}).items():
            self._repos[repo] = max(filter(None, (self._repos.get(repo), rev)), default=None)
        if self.owed_since is None:
            self.owed_since = time.time()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._loop(), name=f"sync {self.uri}")

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    async def _loop(self) -> None:
        while self._full or self._repos:
            full, repos = self._full, self._repos
            self._full, self._repos = False, {}
            try:
                again = await self._run_pass(full, repos)
            except asyncio.CancelledError:
                raise
            except Exception:  # a pass never takes the runner down; the next request or poll retries
                log.exception("space sync pass failed", extra={"fields": {"space": self.uri}})
                again = False
            self.passes += 1
            self._full = self._full or again
        self.owed_since = None

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
