"""The bounded worker pool for CPU work (FAISS, ONNX, large numpy ops).

Every worker thread pins itself to one OpenMP / BLAS thread: on small shared machines a single query with
two OpenMP threads is several times slower than with one (docs/internals.md#concurrency), and
``faiss.omp_set_num_threads`` only affects the calling thread, so it must run in each worker.

The index-build pool is the exception (docs/internals.md#concurrency): an HNSW build is one long FAISS
call that OpenMP can spread over every core, so its thread gets ``ENGRAM_BUILD_THREADS`` OpenMP threads,
and a lower scheduling priority (``nice``) that the OpenMP threads it starts inherit. The build then runs on
whatever CPU the searches leave idle instead of competing with them for it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import logging
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .affinity import leave_home

T = TypeVar("T")
log = logging.getLogger(__name__)
# How far the index-build pool's threads sit below searches: at nice 10 the kernel gives a search thread ~9x
# the CPU share of a build thread on a contended core (weights 1024 vs 110), yet an idle core goes to the build.
BUILD_NICE = 10


def _pin_worker_threads(omp_threads: int = 1, nice: int = 0) -> None:
    if nice:  # the index-build pool: low priority, on every core rather than a pinned process's own
        _lower_priority(nice)
        leave_home()
    try:
        import faiss

        faiss.omp_set_num_threads(omp_threads)
    except ImportError:  # pragma: no cover - faiss is a hard dependency, but keep the pool usable without it
        pass


def _lower_priority(nice: int) -> None:
    """Raise this thread's nice value by ``nice``. On Linux a thread id names one thread, and threads it
    starts later (OpenMP's team) inherit the value; elsewhere this changes nothing rather than the whole
    process's priority."""
    if not hasattr(os, "setpriority") or os.uname().sysname != "Linux":
        return
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + nice)
    except OSError as exc:  # a sandbox may forbid it: the build still runs, at normal priority
        log.warning("could not lower the index-build thread's priority: %s", exc)


class Claimable:
    """Owned by whoever claims it first. The claim is a one-element list popped by the first claimant
    (``list.pop`` is one atomic step under the GIL), so exactly one of a worker and a canceller wins."""

    __slots__ = ("_claim",)

    def __init__(self) -> None:
        self._claim = [True]

    def claim(self) -> bool:
        """True for the first caller only."""
        try:
            self._claim.pop()
        except IndexError:
            return False
        return True


class Job(Claimable):
    """One call on a worker thread that reports back to the event loop with ``done(result, error)``,
    without a ``concurrent.futures.Future``: the search hot path's hand-off (docs/internals.md#concurrency).
    A Future builds a Condition and an RLock, takes them to run, to finish and to add a callback; that was a
    measurable share of a search's CPU, and the hot path needs none of it (one waiter, already on the loop).

    Whoever claims the job first owns it (``Claimable``): the worker, which then runs the call and
    reports, or ``cancel``, which then owns the clean-up. Exactly one of them wins, so ``done`` runs at most
    once and never for a cancelled job."""

    __slots__ = ("_call", "_done", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop, call: Callable[[], Any], done: Callable[..., None]):
        super().__init__()
        self._loop, self._call, self._done = loop, call, done

    def cancel(self) -> bool:
        """True if the call had not started: it never will, and ``done`` is not called."""
        return self.claim()

    def run(self) -> None:  # on a worker thread
        if not self.claim():
            return  # cancelled before it started
        try:
            result, error = self._call(), None
        except BaseException as exc:  # noqa: BLE001 - reported to the waiter, as a Future would
            result, error = None, exc
        self._report(result, error)

    def abandon(self) -> None:
        """The pool shut down before the call ran: report it as cancelled."""
        if self.cancel():
            self._report(None, asyncio.CancelledError())

    def _report(self, result: Any, error: BaseException | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
            self._loop.call_soon_threadsafe(self._done, result, error)


class _FutureCall:
    """A call for ``start``/``run``/``submit``: its outcome goes into a concurrent future."""

    __slots__ = ("_call", "future")

    def __init__(self, call: Callable[[], Any]):
        self.future: concurrent.futures.Future = concurrent.futures.Future()
        self._call = call

    def run(self) -> None:
        if not self.future.set_running_or_notify_cancel():
            return
        try:
            result = self._call()
        except BaseException as exc:  # noqa: BLE001 - the awaiting side re-raises it
            self.future.set_exception(exc)
        else:
            self.future.set_result(result)

    def abandon(self) -> None:
        self.future.cancel()


class WorkerPool:
    """A fixed set of worker threads over one queue. Hand-written rather than a ThreadPoolExecutor for the
    hot path's ``dispatch`` (see ``Job``); ``start``/``run``/``submit`` keep concurrent-future semantics."""

    def __init__(self, workers: int = 2, name: str = "engram-cpu", *, omp_threads: int = 1, nice: int = 0):
        """``omp_threads`` OpenMP threads per worker (1 for searches: see above); ``nice`` lowers the
        workers' scheduling priority by that much (the index-build pool)."""
        self.size = workers
        self.omp_threads = omp_threads
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()  # orders a put against close(): nothing is queued after the drain
        self._closed = False
        self._idle = 0  # workers waiting for an item (a split scan's hint: engram/search/split_scan.py)
        self._idle_lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._work, args=(omp_threads, nice), name=f"{name}_{n}", daemon=True)
            for n in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def _work(self, omp_threads: int, nice: int) -> None:
        _pin_worker_threads(omp_threads, nice)
        get, idle = self._queue.get, self._idle_lock
        while True:
            with idle:
                self._idle += 1
            item = get()
            with idle:
                self._idle -= 1
            if item is None:
                break
            item.run()
            del item  # drop the call's references before waiting for the next one
        self._queue.put(None)  # pass the stop on to the next worker

    def has_idle_worker(self) -> bool:
        """A worker waits for work and nothing is queued for it: an item put now starts at once. A hint (it
        may change the next moment), for work that is only worth splitting onto a free worker."""
        return self._idle > 0 and self._queue.empty()

    def _put(self, item: Job | _FutureCall) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new work after the worker pool shut down")
            self._queue.put(item)

    async def run(self, fn: Callable[..., T], /, *args, **kwargs) -> T:
        return await asyncio.wrap_future(self.start(functools.partial(fn, *args, **kwargs)))

    def start(self, fn: Callable[..., T], /, *args) -> concurrent.futures.Future:
        """Queue fn(*args) (in a copy of the caller's context) and return its concurrent future."""
        item = _FutureCall(functools.partial(contextvars.copy_context().run, fn, *args))
        self._put(item)
        return item.future

    def dispatch(self, loop: asyncio.AbstractEventLoop, fn: Callable[..., T], args: tuple, done) -> Job:
        """Queue fn(*args) (in a copy of the caller's context); ``done(result, error)`` then runs on ``loop``
        unless the returned job was cancelled before it started (the search hot path, see ``Job``)."""
        job = Job(loop, functools.partial(contextvars.copy_context().run, fn, *args), done)
        self._put(job)
        return job

    def enqueue(self, item) -> None:
        """Queue an item with ``run()`` (on a worker) and ``abandon()`` (the pool shut down first): a search
        batch (engram/search/search_job.py), which callers join while it waits in the queue."""
        self._put(item)

    def submit(self, fn: Callable[..., T], /, *args, **kwargs):
        """Start work without awaiting it (a background load keeps going after its callers give up)."""
        return asyncio.wrap_future(self.start(functools.partial(fn, *args, **kwargs)))

    def close(self) -> None:
        """Cancel what has not started, let running calls finish, and wait for the threads."""
        with self._lock:
            if not self._closed:
                self._closed = True
                while True:
                    try:
                        pending = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if pending is not None:
                        pending.abandon()
                self._queue.put(None)
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join()
