"""engram's index against the vector indexes users would pick instead, on the same vectors, side by side
(docs/benchmarks.md#peers). Needs the `bench` extra: `.venv/bin/pip install -e '.[bench]'`.

Series (scripts/peer_indexes.py): engram `SpaceIndex` (exact fp16 scan, and HNSW + exact re-rank with
`ENGRAM_EXACT_MAX` below n), faiss `IndexHNSWFlat`, hnswlib, usearch, chromadb (embedded), lancedb
(IVF_HNSW_SQ) and qdrant-client's local mode, with M=32 and search breadth 128 where the library has them.
Recall@10 is against exact numpy search on the fp16-rounded vectors; latency is one query at a time on one
thread (p50/p99), rounds interleaved across the series; QPS is 2 threads calling search back to back.

Corpora: `latent` (synthetic 384-d vectors with 48-d structure) or `docstrings` (real MiniLM embeddings of
the installed packages' docstrings, scripts/docstring_corpus.py; nothing is downloaded).

    .venv/bin/python scripts/bench_peers.py --size 20000 --queries 200 --rounds 3
    .venv/bin/python scripts/bench_peers.py --corpus docstrings --size 10000
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
from benchlib import latent, load_average, threaded_qps
from peer_indexes import PEERS, K


def unit_f16(vectors: np.ndarray) -> np.ndarray:
    """fp16-rounded, then re-normalised: what engram stores, given to every series alike."""
    rounded = vectors.astype(np.float16).astype(np.float32)
    return rounded / np.linalg.norm(rounded, axis=1, keepdims=True)


def corpus(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray, str]:
    if args.corpus == "docstrings":
        from docstring_corpus import embedded_corpus

        stored, queries, available = embedded_corpus(args.size, args.queries)
        what = f"MiniLM embeddings of installed packages' docstrings ({available} distinct texts found)"
        return unit_f16(stored), unit_f16(queries), what
    return unit_f16(latent(args.size, 384, seed=1)), unit_f16(latent(args.queries, 384, seed=2)), "latent"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", choices=["latent", "docstrings"], default="latent")
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--only", nargs="*", default=None, help="series names to run (default: all)")
    args = parser.parse_args()
    faiss.omp_set_num_threads(1)
    stored, queries, what = corpus(args)
    truth = np.argsort(-(queries @ stored.T), axis=1, kind="stable")[:, :K]
    chosen = {name: b for name, b in PEERS.items() if args.only is None or name.split(" ")[0] in args.only}
    searches, build_s, recall = {}, {}, {}
    for name, build in chosen.items():
        t0 = time.perf_counter()
        searches[name] = build(stored)
        build_s[name] = time.perf_counter() - t0
        hits = [set(np.asarray(searches[name](q)).tolist()) for q in queries]
        recall[name] = float(
            np.mean([len(h & set(t.tolist())) / K for h, t in zip(hits, truth, strict=True)])
        )
        print(f"built {name} in {build_s[name]:.1f} s, recall@10 {recall[name]:.4f}", file=sys.stderr)
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
            rates[name].append(threaded_qps(search, queries, args.seconds))
    print(
        f"{args.size} x {stored.shape[1]} {what}, {args.queries} queries, {args.rounds} rounds, "
        f"load {load_average()}\n"
    )
    print("| index | build s | recall@10 | p50 ms | p99 ms | QPS, 2 threads |")
    print("|---|---|---|---|---|---|")
    for name in searches:
        print(
            f"| {name} | {build_s[name]:.1f} | {recall[name]:.4f} | {statistics.median(p50[name]):.3f} | "
            f"{statistics.median(p99[name]):.3f} | {statistics.median(rates[name]):.0f} |"
        )


if __name__ == "__main__":
    main()
