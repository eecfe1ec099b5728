"""Filtered search (docs/benchmarks.md#filtered-search): recall@10 against a brute-force oracle and p50
latency per selectivity, exact and HNSW, and what explanations add per query.

Rows carry an attrs field `bucket` (0..9999, uniform), so `{"bucket": {"lte": s x 10000 - 1}}` allows a
fraction s of them; selectivities 0.1 %, 1 %, 10 %, 50 % and 100 % (no filter). Each index answers the same
queries through `SpaceIndex.search`, as the service's worker does (1 OpenMP thread); the oracle is numpy
over the fp16-rounded vectors of the allowed rows. The explanation cost is `KeywordIndex.annotate` (what
`EngramRanking.run` adds per space with hits: idf, matched terms of 30 pool rows, supersedes postings,
allowed count) plus `explain.finish`, at `--explain-rows` memories.

    .venv/bin/python scripts/bench_filters.py                   # 100k rows, d=384, exact and HNSW
    .venv/bin/python scripts/bench_filters.py --rows 20000 --dims 64 --queries 50   # a quick look
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import faiss
import numpy as np

from engram.search.filters import AttrPredicate, Filters
from engram.search.index import IndexTuning, SpaceIndex
from engram.search.keyword_index import KeywordIndex
from engram.search.rows import IndexRows
from engram.service.explain import finish
from engram.service.ranking import DEFAULT_POLICY, POOL, RankedMemory
from engram.store.models import Memory

K = 10
BUCKETS = 10_000
SELECTIVITIES = (0.001, 0.01, 0.1, 0.5, 1.0)
WORDS = [
    "deploy",
    "staging",
    "postgres",
    "billing",
    "invoice",
    "retro",
    "oncall",
    "sync",
    "budget",
    "launch",
    "review",
    "pnpm",
    "docker",
]


def vectors(n: int, d: int, seed: int, centres: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    c = np.random.default_rng(12345).standard_normal((centres, d)).astype(np.float32)
    x = c[rng.integers(0, centres, n)] + rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def rows_of(n: int, d: int) -> IndexRows:
    buckets = np.random.default_rng(7).integers(0, BUCKETS, n)
    return IndexRows(
        np.arange(1, n + 1, dtype=np.int64),
        vectors(n, d, 1, max(1, n // 500)).astype(np.float16),
        [f"did:plc:{i % 10}" for i in range(n)],
        np.arange(n, dtype=np.int64),
        [()] * n,
        [{"bucket": int(b)} for b in buckets],
    )


def filter_for(selectivity: float) -> Filters | None:
    if selectivity >= 1.0:
        return None
    return Filters(attrs=(AttrPredicate("bucket", lte=selectivity * BUCKETS - 1),))


def oracle(unit: np.ndarray, buckets: np.ndarray, q: np.ndarray, selectivity: float) -> set[int]:
    allowed = (
        np.flatnonzero(buckets <= selectivity * BUCKETS - 1) if selectivity < 1 else np.arange(len(unit))
    )
    scores = unit[allowed] @ q
    return set((allowed[np.argsort(-scores, kind="stable")[:K]] + 1).tolist())


def measure(index: SpaceIndex, rows: IndexRows, queries: np.ndarray) -> list[tuple[float, float, float]]:
    unit32 = rows.vectors.astype(np.float32)
    buckets = np.array([a["bucket"] for a in rows.attrs])
    out = []
    for s in SELECTIVITIES:
        f = filter_for(s)
        times, hits = [], 0
        for q in queries:
            start = time.perf_counter()
            got = index.search(q, K, f, time.monotonic() + 60)
            times.append(time.perf_counter() - start)
            hits += len(set(got.row_ids.tolist()) & oracle(unit32, buckets, q, s))
        out.append((s, hits / (K * len(queries)), float(np.median(times)) * 1000))
    return out


def explanation_cost(n: int, queries: int) -> float:
    rng = np.random.default_rng(3)
    keywords = KeywordIndex()
    keywords.add([
        (i, "did:plc:a", i, (), " ".join(rng.choice(WORDS, 12)), None, {"supersedes": f"at://x/{i - 1}"})
        for i in range(1, n + 1)
    ])  # fmt: skip
    times = []
    for j in range(queries):
        text = " ".join(rng.choice(WORDS, 4))
        pool = [int(r) for r in rng.integers(1, n + 1, POOL)]
        memories = [Memory(r, f"at://x/{r}", "cid", "did:plc:a", str(r), "t", (), None, {}, "", r, "", "m")
                    for r in pool]  # fmt: skip
        hits = [RankedMemory(m, 0.5, 0.5, 0.2) for m in memories]
        owner = dict.fromkeys(pool, "space")
        start = time.perf_counter()
        names = [x for m in memories for x in (m.uri, m.rkey)]
        annotation = keywords.annotate(text, pool[:K], names, None)  # terms for what is returned (ranking.py)
        finish(hits, {"space": annotation}, owner, {}, {}, DEFAULT_POLICY, limit=K, current=j % 2 == 0,
               min_confidence=None, spaces=["space"])  # fmt: skip
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--dims", type=int, default=384)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--explain-rows", type=int, default=10_000)
    args = ap.parse_args()
    faiss.omp_set_num_threads(1)
    print(f"load average before: {os.getloadavg()}")
    rows = rows_of(args.rows, args.dims)
    queries = vectors(args.queries, args.dims, 2, max(1, args.rows // 500))
    for kind, tuning in (("exact", IndexTuning(exact_max=args.rows + 1)), ("hnsw", IndexTuning(exact_max=0))):
        start = time.perf_counter()
        index = SpaceIndex.build(rows, args.dims, 1, tuning)
        print(f"{kind}: built {args.rows} x {args.dims} in {time.perf_counter() - start:.1f} s")
        results = measure(index, rows, queries)
        unfiltered = results[-1][2]
        for s, recall, p50 in results:
            print(f"  {kind} selectivity {s:>6.1%}: recall@10 {recall:.3f}  p50 {p50:.3f} ms"
                  f"  ({p50 / unfiltered:.2f}x unfiltered)")  # fmt: skip
        del index
    cost = explanation_cost(args.explain_rows, 200)
    print(f"explanations at {args.explain_rows} memories: p50 {cost:.3f} ms per query (annotate + finish)")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
