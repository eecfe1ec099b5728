"""Benchmark an embedder: load time, single-query latency (one intra-op thread), batch throughput.

    .venv/bin/python scripts/bench_embed.py                   # the built-in MiniLM
    .venv/bin/python scripts/bench_embed.py --spec onnx:/path/to/dir --queries 300 --docs 2000

Load time is measured in a fresh interpreter (imports included), as a service start would see it.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engram.embed import load_embedder

_WORDS = [
    "meeting",
    "notes",
    "project",
    "deadline",
    "budget",
    "travel",
    "flight",
    "hotel",
    "password",
    "reset",
    "customer",
    "invoice",
    "report",
    "design",
    "review",
    "bug",
    "fix",
    "deploy",
    "server",
    "database",
    "index",
    "memory",
    "search",
    "agent",
    "garden",
    "cat",
    "sofa",
    "weather",
    "spring",
    "recipe",
    "apple",
    "pie",
    "quarterly",
    "tax",
    "filing",
    "car",
    "insurance",
    "doctor",
    "appointment",
]


def sentences(n: int, words: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(_WORDS) for _ in range(rng.randint(max(1, words // 2), words * 3 // 2))) + "."
        for _ in range(n)
    ]


def cold_load_seconds(spec: str) -> float:
    code = (
        "import time; t = time.perf_counter(); from engram.embed import load_embedder; "
        f"load_embedder({spec!r}); print(time.perf_counter() - t)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    return float(out.stdout.strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", default="builtin")
    ap.add_argument("--queries", type=int, default=200, help="single-query calls for latency")
    ap.add_argument("--docs", type=int, default=1000, help="documents for batch throughput")
    ap.add_argument(
        "--workers", type=int, default=2, help="threads sharing the embedder for the concurrent run"
    )
    args = ap.parse_args()

    loads = [cold_load_seconds(args.spec) for _ in range(3)]
    e = load_embedder(args.spec)
    if e is None:
        sys.exit("spec 'none' has nothing to benchmark")

    queries = sentences(args.queries, 8, seed=1)
    for q in queries[:10]:
        e.embed([q], "query")  # warm caches before timing
    lat = []
    for q in queries:
        t = time.perf_counter()
        e.embed([q], "query")
        lat.append(time.perf_counter() - t)
    lat_ms = np.array(lat) * 1000

    docs = sentences(args.docs, 15, seed=2)
    t = time.perf_counter()
    e.embed(docs, "document")
    batch_s = time.perf_counter() - t

    t = time.perf_counter()
    with ThreadPoolExecutor(args.workers) as pool:
        list(pool.map(lambda q: e.embed([q], "query"), queries))
    concurrent_s = time.perf_counter() - t

    print(
        json.dumps(
            {
                "embedder": e.info(),
                "cold_load_s": {"min": round(min(loads), 3), "max": round(max(loads), 3)},
                "single_query_ms": {
                    "n": len(lat),
                    "p50": round(float(np.percentile(lat_ms, 50)), 2),
                    "p99": round(float(np.percentile(lat_ms, 99)), 2),
                    "mean": round(float(lat_ms.mean()), 2),
                },
                "batch": {
                    "docs": len(docs),
                    "seconds": round(batch_s, 2),
                    "docs_per_s": round(len(docs) / batch_s, 1),
                },
                "concurrent_queries": {
                    "workers": args.workers,
                    "queries_per_s": round(len(queries) / concurrent_s, 1),
                },
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
