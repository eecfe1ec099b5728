"""Fail a test if the event loop stalls: a heartbeat task records the largest gap between its wake-ups.

    async with loop_guard(max_gap_s=0.1) as guard:
        await run_searches()
    # raises AssertionError on exit if any gap exceeded max_gap_s; guard.max_gap_s holds the worst gap
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass


@dataclass
class LoopGuard:
    interval_s: float
    max_gap_s: float = 0.0
    beats: int = 0


@asynccontextmanager
async def loop_guard(max_gap_s: float = 0.1, interval_s: float = 0.005) -> AsyncIterator[LoopGuard]:
    guard = LoopGuard(interval_s)

    async def heartbeat() -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(interval_s)
            now = time.perf_counter()
            guard.max_gap_s = max(guard.max_gap_s, now - last - interval_s)
            guard.beats += 1
            last = now

    task = asyncio.get_running_loop().create_task(heartbeat())
    await asyncio.sleep(0)
    try:
        yield guard
    finally:
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
    assert guard.beats > 0, "heartbeat never ran: the loop was blocked for the whole block"
    assert guard.max_gap_s <= max_gap_s, f"event loop blocked for {guard.max_gap_s * 1000:.0f} ms (limit {max_gap_s * 1000:.0f} ms)"
