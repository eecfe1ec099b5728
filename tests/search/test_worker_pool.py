"""WorkerPool: the hot path's Future-free jobs (dispatch) and the concurrent-future calls (start/run/submit),
including cancellation before a job starts and shutdown with work still queued."""

from __future__ import annotations

import asyncio
import threading

import pytest
from support.search_fakes import until as _until

from engram.workers import WorkerPool


def _blocker(pool: WorkerPool) -> tuple[threading.Event, threading.Event]:
    """Occupy the pool's only worker until `release` is set."""
    busy, release = threading.Event(), threading.Event()
    pool.start(lambda: (busy.set(), release.wait(60)))
    assert busy.wait(60)
    return busy, release


async def _report(pool: WorkerPool, fn, *args):
    loop = asyncio.get_running_loop()
    reported = loop.create_future()
    pool.dispatch(loop, fn, args, lambda result, error: reported.set_result((result, error)))
    return await asyncio.wait_for(reported, 60)


async def test_dispatch_reports_the_result_or_the_error_on_the_loop():
    pool = WorkerPool(2, name="test-dispatch")
    try:
        assert await _report(pool, lambda a, b: a + b, 2, 3) == (5, None)
        result, error = await _report(pool, lambda: 1 / 0)
        assert result is None and isinstance(error, ZeroDivisionError)
        assert await pool.run(lambda x, *, y: x * y, 6, y=7) == 42
    finally:
        pool.close()


async def test_a_job_cancelled_before_it_starts_never_runs_nor_reports():
    pool = WorkerPool(1, name="test-cancel")
    try:
        _, release = _blocker(pool)
        loop = asyncio.get_running_loop()
        ran, reports = [], []
        job = pool.dispatch(loop, ran.append, (1,), lambda *outcome: reports.append(outcome))
        assert job.cancel() is True
        assert job.cancel() is False  # the claim is gone: only one side ever owns the clean-up
        release.set()
        assert await _report(pool, lambda: "after") == ("after", None)  # the queue moved past it
        assert ran == [] and reports == []
    finally:
        pool.close()


async def test_a_running_job_cannot_be_cancelled_and_reports_once():
    pool = WorkerPool(1, name="test-running")
    try:
        loop = asyncio.get_running_loop()
        started, release = threading.Event(), threading.Event()
        reports: asyncio.Queue = asyncio.Queue()
        job = pool.dispatch(
            loop,
            lambda: (started.set(), release.wait(60))[1],
            (),
            lambda *outcome: reports.put_nowait(outcome),
        )
        assert await asyncio.to_thread(started.wait, 60)
        assert job.cancel() is False
        release.set()
        assert await asyncio.wait_for(reports.get(), 60) == (True, None)
        assert reports.empty()
    finally:
        pool.close()


async def test_close_cancels_queued_work_and_refuses_new_work():
    pool = WorkerPool(1, name="test-close")
    _, release = _blocker(pool)
    loop = asyncio.get_running_loop()
    reported = loop.create_future()
    pool.dispatch(loop, lambda: "never", (), lambda result, error: reported.set_result(error))
    queued = pool.start(lambda: "never")
    closer = threading.Thread(target=pool.close)
    closer.start()
    for _ in range(6000):  # until close() has marked the pool closed (a bound, not a timing assumption)
        if pool._closed:
            break
        await asyncio.sleep(0.01)
    with pool._lock:  # close() drains the queue under this lock: once we hold it, the drain is over
        pass
    release.set()
    await asyncio.to_thread(closer.join, 60)
    assert isinstance(await asyncio.wait_for(reported, 60), asyncio.CancelledError)
    assert queued.cancelled()
    with pytest.raises(RuntimeError):
        pool.start(lambda: None)
    with pytest.raises(RuntimeError):
        pool.dispatch(loop, lambda: None, (), lambda *_: None)


async def test_has_idle_worker_only_while_a_worker_waits_and_nothing_is_queued():
    pool = WorkerPool(1, name="test-idle")
    try:
        await _until(pool.has_idle_worker, "the worker waits for work")
        _, release = _blocker(pool)
        assert not pool.has_idle_worker()  # busy
        queued = pool.start(lambda: None)
        assert not pool.has_idle_worker()
        release.set()
        await asyncio.wrap_future(queued)
        await _until(pool.has_idle_worker, "the worker waits again")  # the count came back to one
    finally:
        pool.close()
