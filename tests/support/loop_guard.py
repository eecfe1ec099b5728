"""Fail a test if the event loop stalls: a heartbeat task accounts for every gap between its wake-ups.

    async with loop_guard() as guard:
        await run_searches()
    # on exit: AssertionError if, between two beats, the loop thread computed for > max_busy_s (work ran
    # on the loop) or sat blocked for > max_blocked_s (waiting on the GIL or a lock held by another thread)

Neither limit is a wall-clock gap. A shared 2-core CI box under load can keep the loop thread waiting
for a CPU for hundreds of milliseconds without any code being at fault, so each gap is split into:
- busy: the loop thread's own CPU time (time.thread_time), which blames work done *on* the loop;
- queued: time the thread was runnable but waiting for a CPU (Linux schedstat run delay): machine load,
  nobody's fault, not limited;
- blocked: the rest of the gap beyond the sleep interval, where the loop thread was asleep although its
  timer had fired: a worker hogging the GIL, a lock, synchronous I/O on the loop.
Where /proc/thread-self/schedstat is missing (not Linux) load cannot be told apart from blocking, so
only the busy limit is checked.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

SCHEDSTAT = Path("/proc/thread-self/schedstat")


@dataclass
class LoopGuard:
    interval_s: float
    max_busy_s: float = 0.0  # worst loop-thread CPU time between two beats
    max_blocked_s: float = 0.0  # worst time asleep beyond the interval, neither computing nor queued
    max_queued_s: float = 0.0  # worst time runnable but waiting for a CPU (reported, never limited)
    beats: int = 0


def run_queue_delay_s() -> float | None:
    """Seconds the calling thread has spent runnable but waiting for a CPU, or None if not on Linux."""
    try:
        return int(SCHEDSTAT.read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


@asynccontextmanager
async def loop_guard(
    max_busy_s: float = 0.1, max_blocked_s: float = 0.5, interval_s: float = 0.005
) -> AsyncIterator[LoopGuard]:
    guard = LoopGuard(interval_s)
    checks_blocking = run_queue_delay_s() is not None

    async def heartbeat() -> None:
        last_wall, last_cpu, last_queued = time.perf_counter(), time.thread_time(), run_queue_delay_s() or 0.0
        while True:
            await asyncio.sleep(interval_s)
            wall, cpu, queued = time.perf_counter(), time.thread_time(), run_queue_delay_s() or 0.0
            busy, waited = cpu - last_cpu, queued - last_queued
            guard.max_busy_s = max(guard.max_busy_s, busy)
            guard.max_queued_s = max(guard.max_queued_s, waited)
            guard.max_blocked_s = max(guard.max_blocked_s, wall - last_wall - interval_s - busy - waited)
            guard.beats += 1
            last_wall, last_cpu, last_queued = wall, cpu, queued

    # A full collection of the heap the earlier tests left behind can take 100+ ms on whichever thread
    # triggers it (and holds the GIL meanwhile); that is the test process's history, not the code under
    # test. Collect now and freeze the survivors so the guard measures only what happens inside the block.
    gc.collect()
    gc.freeze()
    task = asyncio.get_running_loop().create_task(heartbeat())
    await asyncio.sleep(0)
    try:
        yield guard
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task
        gc.unfreeze()
    assert guard.beats > 0, "heartbeat never ran: the loop was blocked for the whole block"
    assert guard.max_busy_s <= max_busy_s, (
        f"the event loop computed for {guard.max_busy_s * 1000:.0f} ms without yielding"
    )
    if checks_blocking:
        assert guard.max_blocked_s <= max_blocked_s, (
            f"the event loop was blocked for {guard.max_blocked_s * 1000:.0f} ms "
            f"(limit {max_blocked_s * 1000:.0f} ms; it also waited up to {guard.max_queued_s * 1000:.0f} ms "
            "for a CPU, which is load and not counted)"
        )
