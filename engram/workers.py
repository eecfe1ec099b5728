"""The bounded worker pool for CPU work (FAISS, ONNX, large numpy ops).

Every worker thread pins itself to one OpenMP / BLAS thread: on small shared machines a single query with
two OpenMP threads is several times slower than with one (docs/architecture.md#concurrency), and
``faiss.omp_set_num_threads`` only affects the calling thread, so it must run in each worker.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


def _pin_worker_threads() -> None:
    try:
        import faiss

        faiss.omp_set_num_threads(1)
    except ImportError:  # pragma: no cover - faiss is a hard dependency, but keep the pool usable without it
        pass


class WorkerPool:
    def __init__(self, workers: int = 2, name: str = "engram-cpu"):
        self.size = workers
        self._executor = ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix=name, initializer=_pin_worker_threads
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
