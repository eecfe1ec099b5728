"""The index-build pool (engram/workers.py): HNSW builds get ENGRAM_BUILD_THREADS OpenMP threads at a lower
priority; search workers stay on one OpenMP thread at normal priority."""

import os
import threading
from dataclasses import replace
from pathlib import Path

import faiss
import numpy as np
from support.search_fakes import clustered

from engram.lifecycle import open_context
from engram.search.index import IndexTuning, SpaceIndex
from engram.search.rows import IndexRows
from engram.workers import WorkerPool

N, D = 4_000, 32


def _thread_state() -> tuple[int, int, int]:
    tid = threading.get_native_id()
    return tid, faiss.omp_get_max_threads(), os.getpriority(os.PRIO_PROCESS, tid)


def _nice_of_threads() -> dict[int, int]:
    """nice of every thread of this process (field 19 of /proc/self/task/<tid>/stat)."""
    out = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        out[int(task.name)] = int(stat.rsplit(")", 1)[1].split()[16])
    return out


def _build_hnsw() -> SpaceIndex:
    vectors = clustered(N, D, seed=3)
    rows = IndexRows(
        np.arange(1, N + 1, dtype=np.int64),
        vectors.astype(np.float16),
        ["did:plc:a"] * N,
        np.arange(N, dtype=np.int64),
        [()] * N,
    )
    return SpaceIndex.build(rows, D, 1, IndexTuning(exact_max=100))


async def test_build_workers_get_their_threads_and_a_lower_priority():
    base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    searches = WorkerPool(1, name="test-searches")
    builds = WorkerPool(1, name="test-builds", omp_threads=2, nice=3)
    try:
        _, search_threads, search_nice = await searches.run(_thread_state)
        build_tid, build_threads, build_nice = await builds.run(_thread_state)
        assert (search_threads, search_nice) == (1, base)
        assert (build_threads, build_nice) == (2, base + 3)

        index = await builds.run(_build_hnsw)
        assert index.coarse is not None and index.coarse.ntotal == N
        # The OpenMP team the build started inherited the lower priority: besides the build worker, at least
        # one more thread of this process now runs at its nice value (libgomp keeps its team threads).
        niced = {tid for tid, nice in _nice_of_threads().items() if nice == base + 3}
        assert build_tid in niced and len(niced) >= 2
    finally:
        searches.close()
        builds.close()


async def test_the_service_gives_builds_the_configured_threads_and_searches_one(settings):
    async with open_context(replace(settings, build_threads=3), embedder=False) as ctx:
        assert ctx.index.maintenance.omp_threads == 3
        assert ctx.pool.omp_threads == 1 and ctx.index.loads.omp_threads == 1
