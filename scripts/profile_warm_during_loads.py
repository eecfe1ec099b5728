"""Where a warm search's time goes while other spaces load (docs/benchmarks.md#warm-searches-while-other-spaces-load).

Over a data dir seeded as `bench_many_spaces.py` does (seeded here first, N spaces x M memories, if the
directory does not exist yet, and its index files saved by that benchmark's cold case), one warm space
is searched through `IndexManager.search` at rest and then while every other space loads from its file,
as in that benchmark's warm case. Each search is split into its steps, timed from the loop:
  gen          the store generation read (a hop to a SQLite reader thread and back),
  to_worker    from that answer to the search job starting in the search pool,
  worker       the FAISS search itself,
  to_loop      from the job's end until the awaiting coroutine runs again;
and, per thread group, CPU time and run-queue wait (runnable, but no core free) from
/proc/self/task/<tid>/schedstat (Linux). Threads wait side by side (the loop may queue for a core while a
reader does too), so these overlap and do not add up to the wall time; they say whether a slow search
waited for a core (run queue: the machine is busy) or for another thread of this process (GIL, loop).

    .venv/bin/python scripts/profile_warm_during_loads.py /tmp/many --sets 5000x20
    .venv/bin/python scripts/profile_warm_during_loads.py /tmp/many --code <other checkout>   # the same dir
"""

from __future__ import annotations

import asyncio
import random
import sys
import threading
import time
from pathlib import Path

sys.path.insert(
    0, sys.argv[sys.argv.index("--code") + 1] if "--code" in sys.argv else str(Path(__file__).parents[1])
)
sys.path.insert(1, str(Path(__file__).parent))

import numpy as np
from bench_many_spaces import SPEC, _during_loads, page_all, run_child, seed, settings_for

import engram.search.manager as manager_module
from engram.lifecycle import open_context

STEPS = ("gen", "to_worker", "worker", "to_loop")
GROUPS = {"loop": "MainThread", "readers": "sqlite-reader", "search": "engram-cpu", "loads": "index-load"}


def schedstat(tid: int) -> tuple[int, int]:
    with open(f"/proc/self/task/{tid}/schedstat") as fh:
        cpu, queued, _ = fh.read().split()
    return int(cpu), int(queued)


async def measure(data_dir: Path) -> dict[str, list[dict[str, float]]]:
    marks: dict[str, float] = {}
    job_name = "search_job" if hasattr(manager_module, "search_job") else "_search_job"  # older checkouts
    search_job = getattr(manager_module, job_name)

    def timed_job(*args):
        marks["job_start"] = time.perf_counter()
        try:
            return search_job(*args)
        finally:
            marks["job_end"] = time.perf_counter()

    setattr(manager_module, job_name, timed_job)
    query = np.ones(SPEC.dims, np.float32) / np.sqrt(SPEC.dims)
    async with open_context(settings_for(data_dir), embedder=False) as ctx:
        uris = [status.space.uri for status in await page_all(ctx)]
        random.Random(7).shuffle(uris)
        manager, generation = ctx.index, ctx.index.source.generation

        async def timed_generation(space: str) -> int:
            marks["gen_start"] = time.perf_counter()
            try:
                return await generation(space)
            finally:
                marks["gen_end"] = time.perf_counter()

        manager.source.generation = timed_generation
        warm = uris[0]
        await asyncio.gather(*(manager.search(warm, SPEC.key, SPEC.dims, query, 5) for _ in range(8)))
        await manager.warm(uris[1], SPEC.key, SPEC.dims)  # starts the load threads
        await manager.flush()
        threads = {t.native_id: t.name for t in threading.enumerate()}
        groups = {g: [tid for tid, name in threads.items() if part in name] for g, part in GROUPS.items()}
        rows: list[dict[str, float]] = []

        async def touch(uri: str) -> float:
            before = {g: [schedstat(t) for t in tids] for g, tids in groups.items()}
            t0 = time.perf_counter()
            await manager.search(uri, SPEC.key, SPEC.dims, query, 5)
            t1 = time.perf_counter()
            after = {g: [schedstat(t) for t in tids] for g, tids in groups.items()}
            row = {
                "wall": t1 - t0,
                "gen": marks["gen_end"] - marks["gen_start"],
                "to_worker": marks["job_start"] - marks["gen_end"],
                "worker": marks["job_end"] - marks["job_start"],
                "to_loop": t1 - marks["job_end"],
            }
            for g in groups:
                row[f"{g}_cpu"] = sum(a[0] - b[0] for a, b in zip(after[g], before[g], strict=True)) / 1e9
                row[f"{g}_queued"] = sum(a[1] - b[1] for a, b in zip(after[g], before[g], strict=True)) / 1e9
            rows.append(row)
            return (t1 - t0) * 1000

        for _ in range(300):
            await touch(warm)
        at_rest, rows = rows, []
        await _during_loads(manager, touch, warm, uris[2:])
        return {"at rest": at_rest, "during loads": rows}


def report(name: str, rows: list[dict[str, float]]) -> None:
    wall = np.array([r["wall"] for r in rows]) * 1000
    print(f"{name}: {len(rows)} searches, wall p50 {np.percentile(wall, 50):.3f} p90 {np.percentile(wall, 90):.3f} "
          f"p99 {np.percentile(wall, 99):.3f} ms")  # fmt: skip
    for label, chosen in (("all", wall >= 0), ("slowest 10%", wall >= np.percentile(wall, 90))):
        picked = [r for r, keep in zip(rows, chosen, strict=True) if keep]
        mean = {k: 1000 * float(np.mean([r[k] for r in picked])) for k in picked[0]}
        print(f"  {label:12s} steps: " + " ".join(f"{k} {mean[k]:.3f}" for k in STEPS))
        print(
            f"  {'':12s} threads: "
            + " ".join(f"{k} {v:.3f}" for k, v in mean.items() if "_" in k and k not in STEPS)
        )


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        raise SystemExit(0 if len(sys.argv) > 1 else 2)
    data_dir = Path(sys.argv[1])
    if not data_dir.exists():
        spec = sys.argv[sys.argv.index("--sets") + 1] if "--sets" in sys.argv else "5000x20"
        spaces, per_space = (int(x) for x in spec.split("x"))
        asyncio.run(seed(data_dir, spaces, per_space))
        run_child(data_dir, "cold")  # first builds from SQLite, saved at close: the files the loads read
    for name, rows in asyncio.run(measure(data_dir)).items():
        report(name, rows)


if __name__ == "__main__":
    main()
