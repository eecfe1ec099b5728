"""Many small spaces on one node: cold loads, warm searches during loads, RSS, restart (docs/benchmarks.md).

Seeds N spaces x M memories through the service layer into one data dir, then runs each measurement in a
fresh child process over that data dir (clean RSS, a real restart):
  cold     sequential first-touch searches of every space in random order (c=1): p50/p99 bucketed by how
           many indexes were loaded at the time (first builds from SQLite, then saved);
  warm     one warm space searched at rest, then again while every other space loads from its saved files
           (all loads started at once, warmSpace-style): warm p50/p99 at rest vs during loads, in rounds,
           and cold-load throughput (spaces/s). "At rest" is measured right after each round's loads with
           the same client (a search, then 1 ms asleep) for as many searches as during them, so both p99s
           come from the same estimator; 100 back-to-back searches before each round are reported too;
  parallel the same loads with ENGRAM_LOAD_WORKERS=4: on 2 cores faster loads, but the extra load threads
           take GIL time from the warm space (why the default is one load thread);
  budget   sequential touches under a small RAM budget: RSS stays within budget + a fixed overhead.
Every child also reports the time from opening the data dir to its first answered search.

    .venv/bin/python scripts/bench_many_spaces.py                  # 2,000 x 200 and 10,000 x 20
    .venv/bin/python scripts/bench_many_spaces.py --sets 500x20    # a quick run
    .venv/bin/python scripts/bench_many_spaces.py --huge           # adds 50,000 x 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
# --code PATH runs a child against another checkout (the baseline: the code before this change).
_HERE = str(Path(__file__).resolve().parents[1])
sys.path.insert(0, sys.argv[sys.argv.index("--code") + 1] if "--code" in sys.argv else _HERE)

import numpy as np
from benchlib import data_dir_settings as settings_for
from benchlib import seed as seed_vectors

from engram.lifecycle import open_context
from engram.store import ModelSpec

SPEC = ModelSpec("bench-many", "sha256:bench", 64)
SMALL_BUDGET = 50 << 20
ROUNDS = 5


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(samples: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples), q)) if samples else float("nan")


async def seed(data_dir: Path, spaces: int, per_space: int) -> None:
    rng = np.random.default_rng(1)
    async with open_context(settings_for(data_dir), embedder=False) as ctx:
        for s in range(spaces):
            uri = (await ctx.services.spaces.create_hosted(f"s{s:05d}", model=SPEC)).uri
            await seed_vectors(ctx, uri, rng.standard_normal((per_space, SPEC.dims)), SPEC)
            if s % 500 == 0:
                print(f"  seeded {s}/{spaces} spaces", file=sys.stderr)


async def child(data_dir: Path, mode: str, **changes) -> dict:
    started = time.perf_counter()
    rss0 = rss_mb()
    query = np.ones(SPEC.dims, np.float32) / np.sqrt(SPEC.dims)
    async with open_context(settings_for(data_dir, **changes), embedder=False) as ctx:
        uris = [status.space.uri for status in await page_all(ctx)]
        random.Random(7).shuffle(uris)
        manager = ctx.index

        async def touch(uri: str) -> float:
            t0 = time.perf_counter()
            result = await manager.search(uri, SPEC.key, SPEC.dims, query, 5)
            assert len(result.row_ids) > 0
            return (time.perf_counter() - t0) * 1000

        first = await touch(uris[0])
        out: dict = {
            "mode": mode,
            "spaces": len(uris),
            "first_search_after_open_s": round(time.perf_counter() - started, 3),
            "first_search_ms": round(first, 2),
        }
        if mode in ("cold", "budget"):
            buckets: dict[int, list[float]] = {}
            for uri in uris[1:]:
                loaded = _loaded_count(manager)
                buckets.setdefault(_bucket(loaded), []).append(await touch(uri))
            out["cold_by_loaded"] = {
                str(b): {"p50_ms": round(pct(v, 50), 3), "p99_ms": round(pct(v, 99), 3), "n": len(v)}
                for b, v in sorted(buckets.items())
            }
            await manager.flush()
            out["loaded"], out["loaded_mb"] = _loaded_count(manager), round(manager.loaded_bytes() / 2**20, 1)
            out["rss_mb"], out["rss_growth_mb"] = round(rss_mb(), 1), round(rss_mb() - rss0, 1)
        else:
            # Rounds of "at rest" then "during loads" (each loading a fifth of the spaces with 16 clients), so
            # machine noise hits both alike; the median over rounds of each phase's p50/p99 is reported.
            warm, queue = uris[0], list(uris[1:])
            chunk = max(1, len(queue) // ROUNDS)
            rest_rounds, paced_rounds, load_rounds, load_time, loaded = [], [], [], 0.0, 0
            while queue:
                back_to_back = [await touch(warm) for _ in range(100)]
                batch, queue = queue[:chunk], queue[chunk:]
                during, load_s = await _during_loads(manager, touch, warm, batch)
                load_time += load_s
                loaded += len(batch)
                at_rest = await _paced(touch, warm, max(100, len(during)))
                rest_rounds.append((pct(back_to_back, 50), pct(back_to_back, 99)))
                paced_rounds.append((pct(at_rest, 50), pct(at_rest, 99)))
                load_rounds.append((pct(during, 50), pct(during, 99)))
            out["warm_at_rest"] = _median_round(paced_rounds)
            out["warm_at_rest_back_to_back"] = _median_round(rest_rounds)
            out["warm_during_loads"] = _median_round(load_rounds)
            out["cold_loads_per_s"] = round(loaded / load_time, 1)
        return out


async def _during_loads(manager, touch, warm: str, batch: list[str]) -> tuple[list[float], float]:
    """Load `batch` (warmSpace-style: every load started at once, as many in parallel as the load pool
    allows) while one client keeps searching the warm space; returns its latencies and the load time."""
    during, loading = [], True

    async def probe() -> None:
        while loading:
            during.append(await touch(warm))
            await asyncio.sleep(0.001)

    prober = asyncio.create_task(probe())
    t0 = time.perf_counter()
    for uri in batch:
        await manager.warm(uri, SPEC.key, SPEC.dims)
    await manager.flush()
    elapsed = time.perf_counter() - t0
    loading = False
    await prober
    return during, elapsed


async def _paced(touch, warm: str, count: int) -> list[float]:
    """`count` searches of the warm space by the same client as during loads (1 ms asleep between)."""
    latencies = []
    for _ in range(count):
        latencies.append(await touch(warm))
        await asyncio.sleep(0.001)
    return latencies


def _median_round(rounds: list[tuple[float, float]]) -> dict:
    return {
        "p50_ms": round(statistics.median(p for p, _ in rounds), 3),
        "p99_ms": round(statistics.median(p for _, p in rounds), 3),
        "rounds": len(rounds),
    }


def _bucket(loaded: int) -> int:
    for edge in (100, 500, 1000, 2000, 5000, 10000, 20000, 50000):
        if loaded < edge:
            return edge
    return 10**9


class _Listed:
    def __init__(self, space):
        self.space = space


def _loaded_count(manager) -> int:
    return manager.loaded_count() if hasattr(manager, "loaded_count") else len(manager._entries)


async def page_all(ctx) -> list:
    if not hasattr(ctx.services.spaces, "page"):  # the baseline checkout: no paging yet
        return [_Listed(space) for space in await ctx.services.spaces.list()]
    out, after = [], ""
    while page := await ctx.services.spaces.page(after, 1000):
        out.extend(page)
        after = page[-1].space.uri
    return out


def run_child(data_dir: Path, mode: str, code: str | None = None, **changes) -> dict:
    args = [sys.executable, __file__, "--child", mode, "--data-dir", str(data_dir), "--changes"]
    args += [json.dumps(changes)] + (["--code", code] if code else [])
    done = subprocess.run(args, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", default="2000x200,10000x20", help="comma-separated NxM (spaces x memories)")
    parser.add_argument("--huge", action="store_true", help="also 50,000 x 5")
    parser.add_argument(
        "--baseline", type=Path, help="a checkout of the code before this change: its cold and warm runs too"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--changes", default="{}", help=argparse.SUPPRESS)
    parser.add_argument("--code", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(child(args.data_dir, args.child, **json.loads(args.changes)))))
        return
    sets = args.sets.split(",") + (["50000x5"] if args.huge else [])
    report = {
        "load_average_at_start": os.getloadavg()[0],
        "cpus": os.cpu_count(),
        "dims": SPEC.dims,
        "sets": [],
    }
    for spec in sets:
        n, m = (int(x) for x in spec.split("x"))
        with tempfile.TemporaryDirectory(prefix="engram-many-") as tmp:
            data_dir, old_dir = Path(tmp) / "new", Path(tmp) / "old"
            t0 = time.perf_counter()
            asyncio.run(seed(data_dir, n, m))
            result = {"spaces": n, "per_space": m, "seed_s": round(time.perf_counter() - t0, 1)}
            if args.baseline:
                shutil.copytree(data_dir, old_dir)  # the same SQLite, before any index file exists
            result["cold"] = run_child(data_dir, "cold")  # first builds from SQLite; saved at close
            result["warm"] = run_child(data_dir, "warm")  # loads from the saved files
            result["parallel"] = run_child(data_dir, "parallel", load_workers=4)
            result["budget"] = run_child(data_dir, "budget", ram_bytes=SMALL_BUDGET)
            if args.baseline:
                result["baseline_cold"] = run_child(old_dir, "cold", str(args.baseline))
                result["baseline_warm"] = run_child(old_dir, "warm", str(args.baseline))
            result["ratios"] = ratios(result)
            report["sets"].append(result)
            print(json.dumps(result, indent=2), file=sys.stderr)
    print(json.dumps(report, indent=2))


def _cold_flatness(cold: dict) -> float:
    buckets = cold["cold_by_loaded"]
    return round(buckets[max(buckets, key=int)]["p50_ms"] / buckets[min(buckets, key=int)]["p50_ms"], 2)


def ratios(result: dict) -> dict:
    warm = result["warm"]
    out = {
        "cold_p50_last_bucket_over_first": _cold_flatness(result["cold"]),
        "warm_p99_during_loads_over_at_rest": round(
            warm["warm_during_loads"]["p99_ms"] / warm["warm_at_rest"]["p99_ms"], 2
        ),
        "cold_loads_per_s_default_over_4_threads": round(
            warm["cold_loads_per_s"] / result["parallel"]["cold_loads_per_s"], 2
        ),
        "four_threads_warm_p99_during_loads_over_at_rest": round(
            result["parallel"]["warm_during_loads"]["p99_ms"] / result["parallel"]["warm_at_rest"]["p99_ms"],
            2,
        ),
        "small_budget_loaded_mb": result["budget"]["loaded_mb"],
        "small_budget_rss_growth_mb": result["budget"]["rss_growth_mb"],
        "default_budget_rss_growth_mb": result["cold"]["rss_growth_mb"],
    }
    if "warm_at_rest_back_to_back" in warm:
        out["warm_p99_during_loads_over_back_to_back_at_rest"] = round(
            warm["warm_during_loads"]["p99_ms"] / warm["warm_at_rest_back_to_back"]["p99_ms"], 2
        )
    if "baseline_warm" in result:
        old = result["baseline_warm"]
        out["baseline_cold_p50_last_bucket_over_first"] = _cold_flatness(result["baseline_cold"])
        out["cold_loads_per_s_over_baseline"] = round(warm["cold_loads_per_s"] / old["cold_loads_per_s"], 2)
        out["baseline_warm_p99_during_loads_over_at_rest"] = round(
            old["warm_during_loads"]["p99_ms"] / old["warm_at_rest"]["p99_ms"], 2
        )
    return out


if __name__ == "__main__":
    main()
