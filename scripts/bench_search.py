"""End-to-end search benchmark, everything measured side by side in one run (docs/benchmarks.md).

For each space size (10k and 100k memories at d=384 from a deterministic generator; 1M with --million) it
reports:
  - recall@10 of searchMemories over HTTP against exact numpy search on the stored (fp16) vectors;
  - bare in-process search p50/p99 on the very FAISS index the service uses (`index.search` of one query:
    the exact fp16 scan, or the HNSW walk; not engram's SpaceIndex wrapper);
  - the aiohttp floor: a trivial JSON route in the same app, same client, same process;
  - end-to-end signed searchMemories p50/p99 over HTTP (credential verified, signature checked every time);
  - ratio = end-to-end p50 / (bare p50 + floor p50), and the same for p99.
Where the service splits a lone exact scan over an idle worker (ENGRAM_SPLIT_MIN_ROWS rows and up,
docs/internals.md#split-scans) it also reports, in the same rounds:
  - bare split: SpaceIndex.search with the same two-worker split, in-process;
  - end-to-end unsplit: the same requests with splitting turned off in the service;
  - split_ratio = end-to-end p50 / (bare split p50 + floor p50): the service's overhead over what the split
    scan itself costs (the plain ratio's bare is one thread, so a split can take it below 1).
Rounds interleave the series so machine noise hits all of them alike.

    .venv/bin/python scripts/bench_search.py                 # 10k and 100k, exact index (default)
    .venv/bin/python scripts/bench_search.py --ann           # also 100k on the HNSW + exact re-rank path
    .venv/bin/python scripts/bench_search.py --million       # adds 1M (slow to seed)
    .venv/bin/python scripts/bench_search.py --event-loop uvloop  # server and client on uvloop (as `engram serve`)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time

import faiss
import numpy as np
from benchlib import engram_server, interleave, latent, load_average, seed

from engram.search.split_scan import SplitScan
from engram.search.vectors import encode_query_vector
from engram.store import ModelSpec

SPEC = ModelSpec("bench-384", "sha256:bench", 384)
K = 10


def exact_top(stored: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    return np.argsort(-(queries @ stored.T), axis=1, kind="stable")[:, :k]


async def run(n: int, *, exact_max: int, queries: int, rounds: int, count: int) -> dict:
    vectors = latent(n, SPEC.dims, seed=1)
    qs = latent(queries, SPEC.dims, seed=2).astype(np.float16).astype(np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    async with engram_server(exact_max=exact_max, search_concurrency=64) as srv:
        space = (await srv.ctx.services.spaces.create_hosted("bench", model=SPEC)).uri
        t0 = time.perf_counter()
        uris = await seed(srv.ctx, space, vectors, SPEC)
        seed_s = time.perf_counter() - t0
        position = {u: i for i, u in enumerate(uris)}
        headers = srv.signed(space)
        url = f"{srv.base}/xrpc/garden.engram.searchMemories"
        params = [
            {
                "space": space,
                "vector": encode_query_vector(q),
                "model": SPEC.model,
                "modelDigest": SPEC.digest,
                "limit": str(K),
            }
            for q in qs
        ]

        t0 = time.perf_counter()
        async with srv.session.post(
            f"{srv.base}/xrpc/garden.engram.warmSpace", json={"space": space}, headers=headers
        ) as r:
            assert r.status == 200, await r.text()
        await srv.ctx.index.flush()  # the build from SQLite (first load; later starts read the saved file)
        load_s = time.perf_counter() - t0

        stored = vectors.astype(np.float16).astype(np.float32)
        stored /= np.linalg.norm(stored, axis=1, keepdims=True)
        truth = exact_top(stored, qs, K)
        hits = 0
        for i, p in enumerate(params):
            async with srv.session.get(url, params=p, headers=headers) as r:
                body = await r.json()
            got = {position[m["uri"]] for m in body["memories"]}
            hits += len(got & set(truth[i].tolist()))
        recall = hits / (K * len(params))

        index = srv.ctx.index.loaded_index(space, SPEC.key)
        kind = "hnsw+rerank" if index.coarse is not None else "exact-fp16"
        split_rows = srv.ctx.index.split_min_rows
        splits = index.coarse is None and 0 < split_rows <= n

        # bare: the FAISS index itself, one query per call, as a user measures FAISS (the exact fp16 scan, or
        # the HNSW walk at the service's efSearch), not engram's SpaceIndex wrapper around it.
        one_query = [np.ascontiguousarray(q[None, :]) for q in qs]
        if index.coarse is None:

            async def bare(i: int) -> None:
                index.store.search(one_query[i % queries], K)
        else:
            hnsw_params = faiss.SearchParametersHNSW(efSearch=index.tuning.ef_search)

            async def bare(i: int) -> None:
                index.coarse.search(one_query[i % queries], K, params=hnsw_params)

        async def floor(i: int) -> None:
            async with srv.session.get(f"{srv.base}/bench/floor") as r:
                await r.read()

        async def end_to_end(i: int) -> None:
            async with srv.session.get(url, params=params[i % queries], headers=headers) as r:
                assert r.status == 200
                await r.read()

        async def bare_split(i: int) -> None:  # this thread scans one half, a pool worker the other
            index.search(qs[i % queries], K, None, math.inf, SplitScan(srv.ctx.pool, index))

        async def end_to_end_unsplit(i: int) -> None:
            srv.ctx.index.split_min_rows = 0
            try:
                await end_to_end(i)
            finally:
                srv.ctx.index.split_min_rows = split_rows

        series = {"bare": bare, "floor": floor, "end_to_end": end_to_end}
        if splits:
            series |= {"bare_split": bare_split, "end_to_end_unsplit": end_to_end_unsplit}
        load_before = load_average()
        timing = await interleave(rounds, count, **series)
        b, f, e = timing["bare"], timing["floor"], timing["end_to_end"]
        split = {}
        if splits:
            bs, eu = timing["bare_split"], timing["end_to_end_unsplit"]
            split = {
                "bare_split_p50_ms": round(bs["p50_ms"], 3),
                "e2e_unsplit_p50_ms": round(eu["p50_ms"], 3),
                "e2e_unsplit_p99_ms": round(eu["p99_ms"], 3),
                "unsplit_ratio_p50": round(eu["p50_ms"] / (b["p50_ms"] + f["p50_ms"]), 3),
                "split_ratio_p50": round(e["p50_ms"] / (bs["p50_ms"] + f["p50_ms"]), 3),
                "splits": {
                    "split": srv.ctx.index.batch_stats.split,
                    "taken_back": srv.ctx.index.batch_stats.taken_back,
                },
            }
        return {
            "n": n,
            "dims": SPEC.dims,
            "index": kind,
            "seed_s": round(seed_s, 1),
            "build_s": round(load_s, 2),
            "recall@10": round(recall, 4),
            "bare_p50_ms": round(b["p50_ms"], 3),
            "bare_p99_ms": round(b["p99_ms"], 3),
            "floor_p50_ms": round(f["p50_ms"], 3),
            "floor_p99_ms": round(f["p99_ms"], 3),
            "e2e_p50_ms": round(e["p50_ms"], 3),
            "e2e_p99_ms": round(e["p99_ms"], 3),
            "ratio_p50": round(e["p50_ms"] / (b["p50_ms"] + f["p50_ms"]), 3),
            "ratio_p99": round(e["p99_ms"] / (b["p99_ms"] + f["p99_ms"]), 3),
            "rounds_e2e_p50_ms": e["rounds_p50_ms"],
            **split,
            "load_avg": f"{load_before} -> {load_average()}",
        }


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--million", action="store_true", help="add a 1M-memory space")
    parser.add_argument("--ann", action="store_true", help="also run 100k on the approximate (HNSW) path")
    parser.add_argument("--sizes", type=int, nargs="*", help="override the space sizes")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--count", type=int, default=100, help="requests per series per round")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--event-loop", choices=["asyncio", "uvloop"], default="asyncio")
    return parser.parse_args()


async def main(args: argparse.Namespace) -> None:
    # The bare series run FAISS on this thread: one OpenMP thread, as engram's search workers use
    # (engram/workers.py). With the default team, its idle thread spins on the other core after each call
    # and slows the bare split series' helper worker.
    faiss.omp_set_num_threads(1)
    sizes = args.sizes or [10_000, 100_000] + ([1_000_000] if args.million else [])
    runs = [(n, 200_000) for n in sizes] + ([(100_000, 50_000)] if args.ann else [])
    results = []
    for n, exact_max in runs:
        result = await run(n, exact_max=exact_max, queries=args.queries, rounds=args.rounds, count=args.count)
        results.append(result)
        print(json.dumps(result), flush=True)
    print(
        "\n| memories | index | recall@10 | bare p50/p99 ms | floor p50/p99 ms | e2e p50/p99 ms | ratio p50 | ratio p99 |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['n']:,} | {r['index']} | {r['recall@10']:.3f} | {r['bare_p50_ms']:.2f} / {r['bare_p99_ms']:.2f} "
            f"| {r['floor_p50_ms']:.2f} / {r['floor_p99_ms']:.2f} | {r['e2e_p50_ms']:.2f} / {r['e2e_p99_ms']:.2f} "
            f"| {r['ratio_p50']:.2f} | {r['ratio_p99']:.2f} |"
        )
    split = [r for r in results if "split_ratio_p50" in r]
    if split:
        print(
            "\n| memories | bare split p50 ms | e2e unsplit p50/p99 ms | unsplit ratio p50 | e2e ÷ (bare split + floor) |"
        )
        print("|---|---|---|---|---|")
        for r in split:
            print(
                f"| {r['n']:,} | {r['bare_split_p50_ms']:.2f} | {r['e2e_unsplit_p50_ms']:.2f} / "
                f"{r['e2e_unsplit_p99_ms']:.2f} | {r['unsplit_ratio_p50']:.2f} | {r['split_ratio_p50']:.2f} |"
            )


if __name__ == "__main__":
    arguments = parse_args()
    if arguments.event_loop == "uvloop":
        import uvloop

        uvloop.run(main(arguments))
    else:
        asyncio.run(main(arguments))
