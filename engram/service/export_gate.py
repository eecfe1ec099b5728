"""Admission for exportSpace: an export draws on its space's search limits, and at most one export of a
space runs at a time.

An export reads every memory of a space and streams it out; one reader made 198 of them in 20 s and
slowed other spaces' searches tenfold. Charging the space's own token bucket (and holding one of its
search slots while the export runs) keeps exports inside the budget the space already has, so they can
only crowd out that space's own searches; the one-in-flight rule stops one space from queuing up copies.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ..errors import RateLimited
from ..search.limits import ConcurrencyCaps, SearchLimiter

RETRY_AFTER_S = 5  # an export of a big space takes seconds: a sooner retry would only be refused again


class ExportGate:
    def __init__(self) -> None:
        self._running = ConcurrencyCaps(1)

    @asynccontextmanager
    async def admit(self, space_uri: str, limiter: SearchLimiter) -> AsyncIterator[None]:
        """Raises RateLimited (429, Retry-After) while another export of the space runs, or when the
        space's search bucket or slots are exhausted."""
        if not self._running.try_enter(space_uri):
            raise RateLimited(
                "an export of this space is already running; retry when it has finished",
                retry_after=RETRY_AFTER_S,
            )
        try:
            async with limiter.acquire(space_uri):
                yield
        finally:
            self._running.leave(space_uri)
