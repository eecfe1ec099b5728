"""Time to first search on a fresh node: load the index snapshot vs rebuild from the store (docs/benchmarks.md).

Seeds one space of N memories (d=384) through the service layer, lets a first node build its index and
upload the snapshot to a file:// store, then starts fresh nodes, each a child process over a copy of the
same database without index files, and times their first search of the space (from the search call to its
answer: the load, plus the catch-up delta of a few writes made after the snapshot):
  snapshot  ENGRAM_INDEX_STORE set: download the snapshot, check it, apply the delta;
  rebuild   no snapshot store: read every row from SQLite and build the index.
Both are run for the exact index (the default up to ENGRAM_EXACT_MAX) and for HNSW (exact_max below N),
alternating, `--rounds` times each; the table reports medians and the ratio rebuild / snapshot.

    .venv/bin/python scripts/bench_snapshot_load.py              # 100,000 memories
    .venv/bin/python scripts/bench_snapshot_load.py --n 20000   # a quick run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from benchlib import data_dir_settings as settings_for
from benchlib import seed as seed_vectors

from engram.lifecycle import open_context
from engram.store import ModelSpec

SPEC = ModelSpec("bench-snapshot", "sha256:bench", 384)
SPACE_NAME = "snapshot-bench"
LATE_WRITES = 20  # written after the snapshot: every fresh node catches up through the delta


async def seed(data_dir: Path, n: int) -> str:
    rng = np.random.default_rng(1)
    async with open_context(settings_for(data_dir), embedder=False) as ctx:
        uri = (await ctx.services.spaces.create_hosted(SPACE_NAME, model=SPEC)).uri
        await seed_vectors(ctx, uri, rng.standard_normal((n, SPEC.dims)), SPEC)
        print(f"  seeded {n}", file=sys.stderr)
    return uri


async def snapshot(data_dir: Path, uri: str, store_url: str, exact_max: int) -> None:
    """The first node builds the index, saves and uploads it; a few writes follow the snapshot."""
    settings = settings_for(data_dir, index_store=store_url, exact_max=exact_max)
    async with open_context(settings, embedder=False) as ctx:
        await ctx.index.rebuild(uri, SPEC.key, SPEC.dims)
        await ctx.index.flush()
        stats = ctx.index.snapshot_stats()
        assert stats.uploads == 1, stats
        rng = np.random.default_rng(exact_max)
        await seed_vectors(ctx, uri, rng.standard_normal((LATE_WRITES, SPEC.dims)), SPEC)


async def child(data_dir: Path, uri: str, store_url: str | None, exact_max: int) -> dict:
    query = np.ones(SPEC.dims, np.float32) / np.sqrt(SPEC.dims)
    async with open_context(
        settings_for(data_dir, index_store=store_url, exact_max=exact_max), embedder=False
    ) as ctx:
        started = time.perf_counter()
        result = await ctx.index.search(uri, SPEC.key, SPEC.dims, query, 10)
        elapsed = time.perf_counter() - started
        assert len(result.row_ids) == 10
        stats = ctx.index.snapshot_stats()
        return {
            "first_search_s": round(elapsed, 3),
            "builds": ctx.index.builds,
            "downloads": stats.downloads if stats else 0,
            "index_kind": "hnsw" if ctx.index.loaded_index(uri, SPEC.key).coarse is not None else "exact",
        }


def run_child(source: Path, work: Path, uri: str, store_url: str | None, exact_max: int) -> dict:
    node = work / "node"
    shutil.rmtree(node, ignore_errors=True)
    shutil.copytree(source, node, ignore=shutil.ignore_patterns("indexes"))
    args = [sys.executable, __file__, "--child", str(node), uri, store_url or "-", str(exact_max)]
    out = subprocess.run(args, check=False, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"child failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="engram-bench-snapshot-") as tmp:
        work = Path(tmp)
        source = work / "first-node"
        results = {}
        uri = asyncio.run(seed(source, args.n))
        for kind, exact_max in (("exact", 200_000), ("hnsw", args.n // 2)):
            store = (work / f"snapshots-{kind}").as_uri()
            asyncio.run(snapshot(source, uri, store, exact_max))
            runs: dict[str, list[dict]] = {"snapshot": [], "rebuild": []}
            for _ in range(args.rounds):  # alternating, so a busy neighbour weighs on both alike
                runs["snapshot"].append(run_child(source, work, uri, store, exact_max))
                runs["rebuild"].append(run_child(source, work, uri, None, exact_max))
            assert all(r["builds"] == 0 and r["downloads"] == 1 for r in runs["snapshot"]), runs
            assert all(r["builds"] == 1 for r in runs["rebuild"]), runs
            snap = statistics.median(r["first_search_s"] for r in runs["snapshot"])
            build = statistics.median(r["first_search_s"] for r in runs["rebuild"])
            results[kind] = {
                "snapshot_s": snap,
                "rebuild_s": build,
                "ratio": round(build / snap, 1),
                "index_kind": runs["snapshot"][0]["index_kind"],
                "runs": runs,
            }
            print(
                f"{kind}: snapshot {snap:.2f} s, rebuild {build:.2f} s, ratio {build / snap:.1f}",
                file=sys.stderr,
            )
        load = {"before": load_before, "after": os.getloadavg()}
        print(
            json.dumps({"n": args.n, "dims": SPEC.dims, "load_average": load, "results": results}, indent=2)
        )


if __name__ == "__main__":
    if "--child" in sys.argv:
        i = sys.argv.index("--child")
        data_dir, uri, store, exact_max = sys.argv[i + 1 : i + 5]
        result = asyncio.run(child(Path(data_dir), uri, None if store == "-" else store, int(exact_max)))
        print(json.dumps(result))
    else:
        main()
