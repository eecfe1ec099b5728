"""The search hot path without a task or shield (engram/search/manager.py): a cancelled caller never
gives the index's read share back while a worker thread still uses the index, and a job cancelled before
it started gives it back at once."""

import asyncio
import threading

import pytest
from support.search_fakes import MODEL, SPACE, D, seeded
from support.search_fakes import until as _until

from engram.config import SearchConfig
from engram.search.manager import IndexManager
from engram.workers import WorkerPool


async def test_a_cancelled_search_keeps_its_read_share_until_the_worker_is_done(pool):
    source, vectors = seeded(n=300)
    manager = IndexManager(source, pool, None, SearchConfig.of())
    await manager.search(SPACE, MODEL, D, vectors[0], 1)
    entry = manager._entries[(SPACE, MODEL)]
    in_worker, release = threading.Event(), threading.Event()

    def hold(result):  # runs in the worker right after FAISS, like the service's hydrate
        in_worker.set()
        release.wait(60)
        return result

    caller = asyncio.create_task(manager.search(SPACE, MODEL, D, vectors[1], 3, then=hold))
    await _until(in_worker.is_set, "the job started in the worker")
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert entry.lock._readers == 1 and entry.busy == 1  # the worker still uses the index
    writer = asyncio.create_task(_take_write_lock(entry))
    await asyncio.sleep(0.05)
    assert not writer.done()  # a delta cannot start under a running search
    release.set()
    await asyncio.wait_for(writer, 60)
    assert entry.lock._readers == 0 and entry.busy == 0
    assert len((await manager.search(SPACE, MODEL, D, vectors[2], 3)).row_ids) == 3


async def test_a_search_cancelled_before_its_job_starts_gives_the_share_back_at_once():
    one = WorkerPool(1, name="test-hot-path")
    try:
        source, vectors = seeded(n=300)
        manager = IndexManager(source, one, None, SearchConfig.of())
        await manager.search(SPACE, MODEL, D, vectors[0], 1)
        entry = manager._entries[(SPACE, MODEL)]
        busy, release = threading.Event(), threading.Event()
        blocker = one.start(lambda: (busy.set(), release.wait(60)))  # the only worker is taken
        await _until(busy.is_set, "the worker is busy")
        queued = asyncio.create_task(manager.search(SPACE, MODEL, D, vectors[1], 3))
        await _until(lambda: entry.lock._readers == 1, "the queued search holds a share")
        queued.cancel()
        await _until(lambda: entry.lock._readers == 0, "the never-started job gave its share back")
        assert entry.busy == 0
        release.set()
        blocker.result(60)
    finally:
        release.set()
        one.close()


async def _take_write_lock(entry) -> None:
    async with entry.lock.write():
        pass
