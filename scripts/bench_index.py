"""In-process benchmark of engram's per-space index (engram.search.SpaceIndex), one run, d=384 by default.

For each size it builds the exact index (FAISS SQ fp16) and the approximate one (HNSW32 over SQ8 + exact
re-rank, forced with exact_max=0), then reports build time, recall@10 against an exact numpy oracle and
p50/p99 single-query latency (1 OpenMP thread, like the service's workers) without a filter and with
filters allowing 1 %, 10 % and 50 % of the rows. A bare FAISS SQ-fp16 scan is timed on the same index as
the floor for exact search.

    .venv/bin/python scripts/bench_index.py                  # 10k and 100k, clustered data
    .venv/bin/python scripts/bench_index.py --data latent    # harder data: 48-d latent structure + noise
    .venv/bin/python scripts/bench_index.py --million        # adds 1M (HNSW build takes many minutes)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import faiss
import numpy as np

from engram.search.filters import Filters
from engram.search.index import IndexTuning, SpaceIndex
from engram.search.rows import IndexRows

K = 10


def clustered(n: int, d: int, seed: int, centres: int) -> np.ndarray:
    """Unit vectors around `centres` shared centres (centre seed fixed, so queries share the clusters)."""
    rng = np.random.default_rng(seed)
    c = np.random.default_rng(12345).standard_normal((centres, d)).astype(np.float32)
    out = np.empty((n, d), dtype=np.float32)
    for start in range(0, n, 100_000):
        m = min(100_000, n - start)
        x = c[rng.integers(0, centres, m)] + rng.standard_normal((m, d)).astype(np.float32)
        out[start : start + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def latent(n: int, d: int, seed: int, _centres: int) -> np.ndarray:
    """Intrinsic dimension 48 embedded in d plus small noise: much harder for ANN than Gaussian clusters."""
    rng = np.random.default_rng(seed)
    basis = np.random.default_rng(54321).standard_normal((48, d)).astype(np.float32)
    out = np.empty((n, d), dtype=np.float32)
    for start in range(0, n, 100_000):
        m = min(100_000, n - start)
        x = rng.standard_normal((m, 48)).astype(np.float32) @ basis + 0.3 * rng.standard_normal(
            (m, d)
        ).astype(np.float32)
        out[start : start + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def make_rows(vectors: np.ndarray, seed: int) -> IndexRows:
    n = vectors.shape[0]
    rng = np.random.default_rng(seed)
    created = rng.permutation(n).astype(np.int64)  # `since` cuts a random (cluster-independent) subset
    return IndexRows(
        np.arange(1, n + 1, dtype=np.int64), vectors.astype(np.float16), ["did:plc:x"] * n, created, [()] * n
    )


def oracle(unit16: np.ndarray, queries: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """Exact top-K row ids (ids are position + 1) by fp32 dot over the fp16-rounded vectors, chunked."""
    best_s = np.full((len(queries), K), -np.inf, np.float32)
    best_i = np.zeros((len(queries), K), np.int64)
    for start in range(0, unit16.shape[0], 50_000):
        block = unit16[start : start + 50_000].astype(np.float32)
        s = queries @ block.T
        if mask is not None:
            s[:, ~mask[start : start + block.shape[0]]] = -np.inf
        s_all = np.concatenate([best_s, s], axis=1)
        i_all = np.concatenate(
            [best_i, np.arange(start, start + block.shape[0])[None, :].repeat(len(queries), 0)], axis=1
        )
        top = np.argsort(-s_all, axis=1, kind="stable")[:, :K]
        best_s, best_i = np.take_along_axis(s_all, top, 1), np.take_along_axis(i_all, top, 1)
    return best_i + 1


def timed(fn, queries):
    lat, out = [], []
    for q in queries:
        t = time.perf_counter()
        out.append(fn(q))
        lat.append((time.perf_counter() - t) * 1000)
    return np.percentile(lat, 50), np.percentile(lat, 99), out


def recall(results, truth) -> float:
    return float(
        np.mean(
            [len(set(r.row_ids.tolist()) & set(t.tolist())) / K for r, t in zip(results, truth, strict=True)]
        )
    )


def bench_size(n: int, d: int, data, n_queries: int) -> list[dict]:
    faiss.omp_set_num_threads(1)
    centres = max(1, n // 500)
    vectors = data(n, d, 1, centres)
    queries = data(n_queries, d, 2, centres)
    rows = make_rows(vectors, 3)
    unit16 = rows.vectors  # already unit before the f16 cast
    out = []

    t = time.perf_counter()
    exact = SpaceIndex.build(rows, d, 1, IndexTuning(exact_max=n + 1))
    exact_build = time.perf_counter() - t
    t = time.perf_counter()
    ann = SpaceIndex.build(rows, d, 1, IndexTuning(exact_max=0))
    ann_build = time.perf_counter() - t

    bare = exact.store
    p50, p99, _ = timed(lambda q: bare.search(q[None, :], K), queries)
    row = {"n": n, "path": "bare FAISS SQfp16 scan", "filter": "none", "build_s": exact_build}
    out.append(row | {"p50_ms": p50, "p99_ms": p99, "recall": 1.0})

    for label, frac in [("none", None), ("1%", 0.01), ("10%", 0.10), ("50%", 0.50)]:
        filters = None if frac is None else Filters(since_ms=int(n * (1 - frac)))
        mask = None if frac is None else rows.created_at >= filters.since_ms
        truth = oracle(unit16, queries, mask)
        for name, index, build in [
            ("exact fp16", exact, exact_build),
            ("HNSW32-SQ8 + re-rank", ann, ann_build),
        ]:

            def run(q, index=index, filters=filters):
                return index.search(q, K, filters, time.monotonic() + 0.25)

            p50, p99, res = timed(run, queries)
            approx = sum(r.approximate for r in res)
            row = {"n": n, "path": name, "filter": label, "build_s": build, "p50_ms": p50, "p99_ms": p99}
            out.append(row | {"recall": recall(res, truth), "approximate": approx})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dims", type=int, default=384)
    ap.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    ap.add_argument("--million", action="store_true", help="also run N=1,000,000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--data", choices=["clustered", "latent"], default="clustered")
    ap.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = ap.parse_args()
    sizes = args.sizes + ([1_000_000] if args.million else [])
    data = clustered if args.data == "clustered" else latent
    print(
        f"# bench_index: d={args.dims}, data={args.data}, k={K}, {args.queries} queries, OpenMP threads=1, "
        f"load={os.getloadavg()[0]:.2f}, faiss {faiss.__version__}, numpy {np.__version__}"
    )
    print("| N | path | filter | build s | p50 ms | p99 ms | recall@10 | approx |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for n in sizes:
        for r in bench_size(n, args.dims, data, args.queries):
            rows.append(r)
            print(
                f"| {r['n']:,} | {r['path']} | {r['filter']} | {r['build_s']:.2f} | {r['p50_ms']:.3f} | {r['p99_ms']:.3f} | "
                f"{r['recall']:.3f} | {r.get('approximate', 0)} |",
                flush=True,
            )
    print(f"# load after: {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
