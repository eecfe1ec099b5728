"""What per-space write locks buy on PostgreSQL (docs/benchmarks.md#writes): one or two writer processes
(standing for nodes) committing single-memory writes to 32 hosted spaces of one database, each process
with `--concurrency` writes in flight, every write either scoped to its space (`Store.write_to`, the path
of memory writes) or unscoped (`Store.write`: the store-wide lock every write took before). The four
combinations run in turn, twice (A B C D D C B A), `--seconds` each, medians reported.

    .venv/bin/python scripts/bench_write_locks.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import numpy as np
from support.postgres_server import PostgresServer, find_binaries

from engram.store import Embedding, MemoryWrite, ModelSpec
from engram.store.memory_writes import put_memories
from engram.store.postgres.store import PostgresStore
from engram.store.spaces import create_space, set_config

SPEC = ModelSpec("bench", "sha256:bench", 64)
SPACES = [f"at://did:plc:bench/space/garden.engram.space/s{i}" for i in range(32)]


async def _writer(
    url: str, scoped: bool, concurrency: int, seconds: float, seed: int, start_at: float
) -> int:
    store = await PostgresStore.open(url)
    rng = np.random.default_rng(seed)
    done = 0
    try:
        await asyncio.sleep(max(0.0, start_at - time.time()))
        stop = time.perf_counter() + seconds

        async def client(w: int) -> None:
            nonlocal done
            n = 0
            while time.perf_counter() < stop:
                uri = SPACES[(w * 7 + n + seed) % len(SPACES)]
                vector = rng.standard_normal(SPEC.dims).astype(np.float32)
                item = MemoryWrite(
                    "did:plc:bench",
                    f"w{seed}-{w}-{n}",
                    embedding=Embedding(SPEC.model, SPEC.digest, SPEC.dims, vector),
                )
                if scoped:
                    await store.write_to(uri, put_memories, uri, [item])
                else:
                    await store.write(put_memories, uri, [item])
                done += 1
                n += 1

        await asyncio.gather(*(client(w) for w in range(concurrency)))
    finally:
        await store.close()
    return done


def _process(url, scoped, concurrency, seconds, seed, start_at, out):
    out.put(asyncio.run(_writer(url, scoped, concurrency, seconds, seed, start_at)))


def run(url: str, processes: int, scoped: bool, concurrency: int, seconds: float) -> float:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start_at = time.time() + 3.0  # every process opens its store first, then all start together
    procs = [
        ctx.Process(target=_process, args=(url, scoped, concurrency, seconds, seed, start_at, out))
        for seed in range(processes)
    ]
    for p in procs:
        p.start()
    total = sum(out.get(timeout=seconds + 120) for _ in procs)
    for p in procs:
        p.join()
    return total / seconds


async def _seed(url: str) -> None:
    store = await PostgresStore.open(url)
    try:
        for uri in SPACES:
            await store.write(create_space, uri, "hosted")
            await store.write(set_config, uri, SPEC)
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    bin_dir = find_binaries()
    if bin_dir is None:
        raise SystemExit("PostgreSQL binaries (initdb, pg_ctl) not found")
    server = PostgresServer(bin_dir).start()
    try:
        url = server.create_database()
        asyncio.run(_seed(url))
        load_before = Path("/proc/loadavg").read_text().split()[:3]
        configs = [(1, False), (2, False), (1, True), (2, True)]
        rates: dict[tuple, list[float]] = {c: [] for c in configs}
        for order in (configs, configs[::-1]):
            for processes, scoped in order:
                rates[(processes, scoped)].append(run(url, processes, scoped, args.concurrency, args.seconds))
        result = {
            "load_average_before": load_before,
            "load_average_after": Path("/proc/loadavg").read_text().split()[:3],
            "concurrency_per_process": args.concurrency,
            "writes_per_s": {
                f"{p} process{'es' if p > 1 else ''}, {'per-space' if s else 'store-wide'} lock": round(
                    statistics.median(v), 1
                )
                for (p, s), v in rates.items()
            },
        }
        for scoped in (False, True):
            one, two = (statistics.median(rates[(p, scoped)]) for p in (1, 2))
            result[f"two vs one, {'per-space' if scoped else 'store-wide'}"] = round(two / one, 2)
        print(json.dumps(result, indent=2))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
