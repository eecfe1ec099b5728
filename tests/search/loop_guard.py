"""Fail a test if the event loop stalls: a heartbeat task measures every gap between its wake-ups.

    async with loop_guard() as guard:
        await run_searches()
    # on exit: AssertionError if the loop thread itself computed for > max_busy_s between two beats
    # (work ran on the loop), or if any wall-clock gap exceeded max_gap_s (e.g. a worker hogging the GIL)

Two limits because a shared 2-core CI box can deschedule the loop thread for 100+ ms without any code
being at fault: the loop thread's own CPU time (time.thread_time) pins blame on work done *on* the loop,
at the ~100 ms the brief asks for, while the looser wall-clock bound still catches GIL starvation.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass


@dataclass
class LoopGuard:
    interval_s: float
    max_gap_s: float = 0.0  # worst wall-clock gap beyond the sleep interval
    max_busy_s: float = 0.0  # worst loop-thread CPU time between two beats
    beats: int = 0


@asynccontextmanager
async def loop_guard(
    max_busy_s: float = 0.1, max_gap_s: float = 0.5, interval_s: float = 0.005
) -> AsyncIterator[LoopGuard]:
    guard = LoopGuard(interval_s)

    async def heartbeat() -> None:
        last_wall, last_cpu = time.perf_counter(), time.thread_time()
        while True:
            await asyncio.sleep(interval_s)
            wall, cpu = time.perf_counter(), time.thread_time()
            guard.max_gap_s = max(guard.max_gap_s, wall - last_wall - interval_s)
            guard.max_busy_s = max(guard.max_busy_s, cpu - last_cpu)
            guard.beats += 1
            last_wall, last_cpu = wall, cpu

    # A full collection of the heap the earlier tests left behind can take 100+ ms on whichever thread
    # triggers it; that is the test process's history, not the code under test. Collect now and freeze the
    # survivors so the guard measures only what happens inside the block.
    gc.collect()
    gc.freeze()
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
        gc.unfreeze()
    assert guard.beats > 0, "heartbeat never ran: the loop was blocked for the whole block"
    assert guard.max_busy_s <= max_busy_s, (
        f"the event loop computed for {guard.max_busy_s * 1000:.0f} ms without yielding"
    )
    assert guard.max_gap_s <= max_gap_s, (
        f"event loop stalled for {guard.max_gap_s * 1000:.0f} ms (limit {max_gap_s * 1000:.0f} ms)"
    )
