"""The bounded worker pool for CPU work (FAISS, ONNX, large numpy ops).

Every worker thread pins itself to one OpenMP / BLAS thread: on small shared machines a single query with
two OpenMP threads is several times slower than with one (docs/architecture.md#concurrency), and
``faiss.omp_set_num_threads`` only affects the calling thread, so it must run in each worker.

The index-build pool is the exception (docs/architecture.md#concurrency): an HNSW build is one long FAISS
call that OpenMP can spread over every core, so its thread gets ``ENGRAM_BUILD_THREADS`` OpenMP threads,
and a lower scheduling priority (``nice``) that the OpenMP threads it starts inherit. The build then runs on
whatever CPU the searches leave idle instead of competing with them for it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
log = logging.getLogger(__name__)
# How far the index-build pool's threads sit below searches: at nice 10 the kernel gives a search thread ~9x
# the CPU share of a build thread on a contended core (weights 1024 vs 110), yet an idle core goes to the build.
BUILD_NICE = 10


def _pin_worker_threads(omp_threads: int = 1, nice: int = 0) -> None:
    if nice:
        _lower_priority(nice)
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


class WorkerPool:
    def __init__(self, workers: int = 2, name: str = "engram-cpu", *, omp_threads: int = 1, nice: int = 0):
        """``omp_threads`` OpenMP threads per worker (1 for searches: see above); ``nice`` lowers the
        workers' scheduling priority by that much (the index-build pool)."""
        self.size = workers
        self.omp_threads = omp_threads
        self._executor = ThreadPoolExecutor(
            max_workers=workers,
            thread_name_prefix=name,
            initializer=_pin_worker_threads,
            initargs=(omp_threads, nice),
        )

    async def run(self, fn: Callable[..., T], /, *args, **kwargs) -> T:
        loop = asyncio.get_running_loop()
        ctx = contextvars.copy_context()
        call = functools.partial(ctx.run, fn, *args, **kwargs)
        return await loop.run_in_executor(self._executor, call)

    def start(self, fn: Callable[..., T], /, *args) -> concurrent.futures.Future:
        """Queue fn(*args) (in a copy of the caller's context) and return its concurrent future: the
        search hot path attaches its own done callback instead of paying for a task around `run`."""
        return self._executor.submit(contextvars.copy_context().run, fn, *args)

    def submit(self, fn: Callable[..., T], /, *args, **kwargs):
        """Start work without awaiting it (a background load keeps going after its callers give up)."""
        return asyncio.wrap_future(self._executor.submit(fn, *args, **kwargs))

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
