"""engram's index against the vector indexes users would pick instead, on the same vectors, side by side
(docs/benchmarks.md#peers). Needs the `bench` extra: `.venv/bin/pip install -e '.[bench]'`.

Series: engram `SpaceIndex` (exact fp16 scan, and HNSW + exact re-rank with `ENGRAM_EXACT_MAX` below n),
faiss `IndexHNSWFlat`, hnswlib and usearch, each with M=32 and its search breadth set for recall@10 near
0.99. Recall@10 is against exact numpy search on the fp16-rounded vectors; latency is one query at a time
on one thread (p50/p99), rounds interleaved across the series; QPS is 2 threads calling search back to back.

    .venv/bin/python scripts/bench_peers.py --size 20000 --queries 200 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import faiss
import numpy as np
from benchlib import latent, threaded_qps

from engram.search.index import IndexTuning, SpaceIndex
from engram.search.rows import IndexRows

K = 10
M = 32


def engram_index(vectors: np.ndarray, exact_max: int):
    n = len(vectors)
    rows = IndexRows(
        np.arange(n, dtype=np.int64),
        vectors.astype(np.float16),
        ["did:web:x"] * n,
        np.zeros(n, np.int64),
        [()] * n,
    )
    index = SpaceIndex.build(rows, vectors.shape[1], 1, IndexTuning(exact_max=exact_max))
    return lambda q: index.search(q, K, None, float("inf")).row_ids


def faiss_hnsw(vectors: np.ndarray):
    index = faiss.IndexHNSWFlat(vectors.shape[1], M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 80
    index.add(vectors)
    index.hnsw.efSearch = 128
    return lambda q: index.search(q[None, :], K)[1][0]


def hnswlib_index(vectors: np.ndarray):
    import hnswlib

    index = hnswlib.Index(space="ip", dim=vectors.shape[1])
    index.init_index(max_elements=len(vectors), M=M, ef_construction=80)
    index.set_num_threads(1)
    index.add_items(vectors, np.arange(len(vectors)))
    index.set_ef(128)
    return lambda q: index.knn_query(q, k=K)[0][0]


def usearch_index(vectors: np.ndarray):
    from usearch.index import Index

    index = Index(ndim=vectors.shape[1], metric="ip", dtype="f32", connectivity=M, expansion_search=128)
    index.add(np.arange(len(vectors)), vectors, threads=1)
    return lambda q: index.search(q, K, threads=1).keys


def qps(search, queries: np.ndarray, seconds: float, threads: int = 2) -> float:
    return threaded_qps(search, queries, seconds, threads)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    faiss.omp_set_num_threads(1)
    stored = latent(args.size, 384, seed=1).astype(np.float16).astype(np.float32)
    stored /= np.linalg.norm(stored, axis=1, keepdims=True)
    queries = latent(args.queries, 384, seed=2).astype(np.float16).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    truth = np.argsort(-(queries @ stored.T), axis=1, kind="stable")[:, :K]
    builders = {
        "engram exact": lambda: engram_index(stored, args.size + 1),
        "engram HNSW + re-rank": lambda: engram_index(stored, 0),
        "faiss HNSWFlat": lambda: faiss_hnsw(stored),
        "hnswlib": lambda: hnswlib_index(stored),
        "usearch": lambda: usearch_index(stored),
    }
    searches, build_s, recall = {}, {}, {}
    for name, build in builders.items():
        t0 = time.perf_counter()
        searches[name] = build()
        build_s[name] = time.perf_counter() - t0
        hits = [set(np.asarray(searches[name](q)).tolist()) for q in queries]
        recall[name] = float(
            np.mean([len(h & set(t.tolist())) / K for h, t in zip(hits, truth, strict=True)])
        )
    p50 = {name: [] for name in searches}
    p99 = {name: [] for name in searches}
    rates = {name: [] for name in searches}
    for _ in range(args.rounds):
        for name, search in searches.items():
            lat = []
            for q in queries:
                t0 = time.perf_counter()
                search(q)
                lat.append((time.perf_counter() - t0) * 1000)
            p50[name].append(float(np.percentile(lat, 50)))
            p99[name].append(float(np.percentile(lat, 99)))
            rates[name].append(qps(search, queries, args.seconds))
    load = Path("/proc/loadavg").read_text().split()[0]
    print(f"{args.size} x 384 latent vectors, {args.queries} queries, {args.rounds} rounds, load {load}\n")
    print("| index | build s | recall@10 | p50 ms | p99 ms | QPS, 2 threads |")
    print("|---|---|---|---|---|---|")
    for name in searches:
        print(
            f"| {name} | {build_s[name]:.1f} | {recall[name]:.4f} | {statistics.median(p50[name]):.3f} | "
            f"{statistics.median(p99[name]):.3f} | {statistics.median(rates[name]):.0f} |"
        )


if __name__ == "__main__":
    main()
