"""Two embedders side by side on one thread: single-query latency interleaved query by query, and passage
throughput in batches of 64, alternating (docs/embedders.md#which-model-a-new-space-gets).

    .venv/bin/python scripts/bench_embedders.py                       # builtin vs multilingual
    .venv/bin/python scripts/bench_embedders.py --specs builtin hashing --queries 400
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engram.embed import load_embedder

QUERIES = [
    "what do I like in my morning cup of joe", "When did Caroline go to the LGBTQ support group?",
    "Which Postgres version does staging run?", "会議はいつですか", "¿Dónde está la reunión del equipo?",
    "회의는 언제입니까", "ENG-1502 safari login loop", "who reviews billing-service changes",
]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--specs", nargs=2, default=["builtin", "multilingual"])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--docs", type=int, default=256)
    args = ap.parse_args()
    print("load average before:", os.getloadavg())
    embedders = [load_embedder(spec) for spec in args.specs]
    for e in embedders:
        e.embed(["warm-up"], "query")
    times = [[] for _ in embedders]
    for i in range(args.queries):
        for n, e in enumerate(embedders):  # interleaved: co-tenant noise hits both alike
            started = time.perf_counter()
            e.embed([QUERIES[i % len(QUERIES)]], "query")
            times[n].append(time.perf_counter() - started)
    docs = [f"{QUERIES[i % len(QUERIES)]} and some more words about item {i}" for i in range(64)]
    rates = [[] for _ in embedders]
    for _ in range(max(1, args.docs // 64)):
        for n, e in enumerate(embedders):
            started = time.perf_counter()
            e.embed(docs, "document")
            rates[n].append(64 / (time.perf_counter() - started))
    p50s = []
    for spec, e, t, r in zip(args.specs, embedders, times, rates, strict=True):
        p50, p99 = np.percentile(t, 50) * 1000, np.percentile(t, 99) * 1000
        p50s.append(p50)
        print(
            f"{spec:14} {e.name:28} query p50 {p50:6.1f} ms  p99 {p99:6.1f} ms  passages {np.median(r):6.1f}/s"
        )
    print(f"query p50 ratio {args.specs[1]} / {args.specs[0]}: {p50s[1] / p50s[0]:.2f}")
    print("load average after:", os.getloadavg())


if __name__ == "__main__":
    main()
