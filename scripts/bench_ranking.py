"""Engram's own ranking (EngramRanking, mode hybrid: both candidate sides, tuned convex fusion, restatement
check over the first 30, idf coverage for the confidence) against pure vector search (SearchService, what
searchMemories answers), both in-process at 100k memories (docs/benchmarks.md). Bar: p50 ratio <= 1.5.

The space and queries are bench_shims.py's (generated vectors and Zipf-distributed text; the `hashing:384`
query embedder costs microseconds, so the ratio compares search work only).

    .venv/bin/python scripts/bench_ranking.py [--memories 100000] [--rounds 5] [--count 60]
"""

from __future__ import annotations

import argparse
import asyncio
import json

from bench_shims import QUERIES, queries, seed_space
from benchlib import engram_server, interleave, load_average

from engram.service.hybrid import Scope, TextSearch
from engram.service.search import SearchQuery
from engram.store import ModelSpec


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--count", type=int, default=60)
    args = parser.parse_args()
    async with engram_server(embedder="hashing:384", text_search_rate=0, search_concurrency=64) as srv:
        e = srv.ctx.embedder
        spec = ModelSpec(e.name, e.digest, e.dims)
        space = await srv.ctx.services.spaces.require(
            await seed_space(srv.ctx, "rank-bench", args.memories, spec)
        )
        texts = queries()
        await srv.ctx.services.ranking.run(
            [Scope(space)], TextSearch(texts[0]), "hybrid"
        )  # builds the keyword index

        async def vector(i: int) -> None:
            await srv.ctx.services.search.search(space, SearchQuery(q=texts[i % QUERIES], limit=10))

        async def engram(i: int) -> None:
            await srv.ctx.services.ranking.run(
                [Scope(space)], TextSearch(texts[i % QUERIES], limit=10), "hybrid"
            )

        before = load_average()
        t = await interleave(args.rounds, args.count, vector=vector, engram=engram)
    row = {"memories": args.memories, **{f"{k}_p50_ms": round(v["p50_ms"], 3) for k, v in t.items()},
           **{f"{k}_p99_ms": round(v["p99_ms"], 3) for k, v in t.items()},
           "ratio_p50": round(t["engram"]["p50_ms"] / t["vector"]["p50_ms"], 3),
           "load_avg": f"{before} -> {load_average()}"}  # fmt: skip
    print(json.dumps(row))


if __name__ == "__main__":
    asyncio.run(main())
