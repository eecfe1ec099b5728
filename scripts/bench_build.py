"""HNSW build time with 1 vs N OpenMP threads on engram's index-build pool (ENGRAM_BUILD_THREADS), same run.

Each round builds the same index (HNSW32 over SQ8, as `SpaceIndex` does above ENGRAM_EXACT_MAX) once per
thread count, interleaved, on a `WorkerPool` set up exactly as the service's build pool (N OpenMP threads,
niced by BUILD_NICE unless --nice says otherwise). Meanwhile one normal-priority thread runs exact searches on a small index back to
back, standing in for the service's search workers: its rate during each build shows what the build takes
away from searches.

    .venv/bin/python scripts/bench_build.py --rows 100000 --threads 1 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import faiss
import numpy as np
from benchlib import latent, load_average

from engram.search.filters import Filters
from engram.search.index import IndexTuning, SpaceIndex
from engram.search.rows import IndexRows
from engram.workers import BUILD_NICE, WorkerPool


def rows_of(vectors: np.ndarray) -> IndexRows:
    n = len(vectors)
    return IndexRows(
        np.arange(1, n + 1, dtype=np.int64), vectors.astype(np.float16), ["did:plc:a"] * n,
        np.arange(n, dtype=np.int64), [()] * n,
    )  # fmt: skip


class BackgroundSearches:
    """One thread searching a 10k exact index back to back; `rate()` = searches/s since the last reset."""

    def __init__(self, d: int):
        self.index = SpaceIndex.build(
            rows_of(latent(10_000, d, seed=9)), d, 1, IndexTuning(exact_max=1_000_000)
        )
        self.queries = latent(200, d, seed=10)
        self.count, self.since, self.stopping = 0, time.perf_counter(), False
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        faiss.omp_set_num_threads(1)
        i = 0
        while not self.stopping:
            self.index.search(self.queries[i % len(self.queries)], 10, Filters(), None)
            self.count += 1
            i += 1

    def reset(self) -> None:
        self.count, self.since = 0, time.perf_counter()

    def rate(self) -> float:
        return self.count / (time.perf_counter() - self.since)


async def main_async(args: argparse.Namespace) -> None:
    rows = rows_of(latent(args.rows, args.dims, seed=1))
    tuning = IndexTuning(exact_max=0)
    pools = {t: WorkerPool(1, name=f"bench-build-{t}", omp_threads=t, nice=args.nice) for t in args.threads}
    searches = BackgroundSearches(args.dims) if args.searches else None
    if searches:
        searches.thread.start()
        await asyncio.sleep(2)
        searches.reset()
        await asyncio.sleep(3)
        idle_rate = searches.rate()
    builds: dict[int, list[float]] = {t: [] for t in args.threads}
    rates: dict[int, list[float]] = {t: [] for t in args.threads}
    cpu: dict[int, list[float]] = {t: [] for t in args.threads}
    for _ in range(args.rounds):
        for t in args.threads:
            if searches:
                searches.reset()
            t0, cpu0 = time.perf_counter(), time.process_time()
            index = await pools[t].run(SpaceIndex.build, rows, args.dims, 1, tuning)
            builds[t].append(time.perf_counter() - t0)
            cpu[t].append(time.process_time() - cpu0)  # every thread of this process, searches included
            if searches:
                rates[t].append(searches.rate())
            assert index.coarse is not None and index.coarse.ntotal == args.rows
            del index
    if searches:
        searches.stopping = True
    for pool in pools.values():
        pool.close()
    report = {
        "rows": args.rows,
        "dims": args.dims,
        "rounds": args.rounds,
        "nice": args.nice,
        "load_average": load_average(),
        "build_s": {t: round(statistics.median(v), 2) for t, v in builds.items()},
        "build_s_rounds": {t: [round(x, 2) for x in v] for t, v in builds.items()},
        "process_cpu_s": {t: round(statistics.median(v), 2) for t, v in cpu.items()},
    }
    if searches:
        report["search_qps_idle"] = round(idle_rate)
        report["search_qps_during_build"] = {t: round(statistics.median(v)) for t, v in rates.items()}
    print(json.dumps(report, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--no-searches", dest="searches", action="store_false")
    parser.add_argument(
        "--nice", type=int, default=BUILD_NICE, help="the build threads' nice increment (the service's: 10)"
    )
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
