"""Engram's own ranking (EngramRanking, mode hybrid: both candidate sides, tuned convex fusion, restatement
check over the first 30, idf coverage for the confidence) against pure vector search (SearchService, what
searchMemories answers), both in-process through the service layer at 100k memories (docs/benchmarks.md).
Bar: p50 ratio <= 1.5.

`--corpus zipf` is bench_shims.py's space (generated vectors and Zipf-distributed words). `--corpus
docstrings` is real text: the first paragraphs of the installed packages' docstrings
(scripts/docstring_corpus.py; ~45k of them, so past that a memory joins two), each memory's vector the
`hashing:384` embedding of its text, and queries of 2-5 words cut from docstrings. The `hashing:384`
query embedder costs microseconds, so the ratio compares search work only. The series run A B, B A, ...

    .venv/bin/python scripts/bench_ranking.py [--memories 100000] [--rounds 6] [--count 60] [--corpus docstrings]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
from pathlib import Path

import numpy as np
from bench_shims import QUERIES, queries, seed_space
from benchlib import engram_server, load_average, pct, timed

from engram.service.hybrid import Scope, TextSearch
from engram.service.search import SearchQuery
from engram.store import Embedding, MemoryWrite, ModelSpec


def docstring_texts() -> list[str]:
    """The docstring corpus, cached in the temp directory (reading every installed package takes minutes)."""
    cache = Path(tempfile.gettempdir()) / "engram-bench-docstring-texts.json"
    if cache.exists():
        return [t for t in json.loads(cache.read_text()) if "\0" not in t]
    from docstring_corpus import docstrings

    found = [t for t in docstrings() if "\0" not in t]  # a memory cannot hold U+0000
    cache.write_text(json.dumps(found))
    return found


def docstring_memories(n: int) -> list[str]:
    found = docstring_texts()
    return [found[i] if i < len(found) else f"{found[i % len(found)]} {found[(7 * i + 3) % len(found)]}"
            for i in range(n)]  # fmt: skip


def docstring_queries() -> list[str]:
    rng, found = random.Random(11), docstring_texts()
    out = []
    for text in rng.sample(found, QUERIES):
        words = text.split()
        start, size = rng.randrange(max(1, len(words) - 5)), rng.randint(2, 5)
        out.append(" ".join(words[start : start + size]))
    return out


async def seed_texts(ctx, name: str, texts: list[str], spec: ModelSpec) -> str:
    space = (await ctx.services.spaces.create_hosted(name, model=spec)).uri
    author = ctx.settings.service_did
    for start in range(0, len(texts), 5000):
        chunk = texts[start : start + 5000]
        vectors = ctx.embedder.embed(chunk, "document")
        items = [
            MemoryWrite(author=author, text=t, created_at="2026-01-01T00:00:00.000Z",
                        embedding=Embedding(spec.model, spec.digest, spec.dims, v.astype(np.float16)))
            for t, v in zip(chunk, vectors, strict=True)
        ]  # fmt: skip
        await ctx.services.memories.write(space, items)
    await ctx.services.search.warm(await ctx.services.spaces.require(space))
    await ctx.index.flush()
    return space


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--corpus", choices=["zipf", "docstrings"], default="zipf")
    args = parser.parse_args()
    async with engram_server(embedder="hashing:384", text_search_rate=0, search_concurrency=64) as srv:
        e = srv.ctx.embedder
        spec = ModelSpec(e.name, e.digest, e.dims)
        if args.corpus == "zipf":
            uri, texts = await seed_space(srv.ctx, "rank-bench", args.memories, spec), queries()
        else:
            uri = await seed_texts(srv.ctx, "rank-bench", docstring_memories(args.memories), spec)
            texts = docstring_queries()
        space = await srv.ctx.services.spaces.require(uri)
        await srv.ctx.services.hybrid.keywords.idf(space, texts[0])  # builds the keyword index, unhurried

        async def vector(i: int) -> None:
            await srv.ctx.services.search.search(space, SearchQuery(q=texts[i % QUERIES], limit=10))

        async def engram(i: int) -> None:
            await srv.ctx.services.ranking.run(
                [Scope(space)], TextSearch(texts[i % QUERIES], limit=10), "hybrid"
            )

        series = {"vector": vector, "engram": engram}
        for fn in series.values():  # warm both paths (first-call caches) outside the timed rounds
            for i in range(QUERIES):
                await fn(i)
        before = load_average()
        rounds: dict[str, list[float]] = {name: [] for name in series}
        samples: dict[str, list[float]] = {name: [] for name in series}
        for r in range(args.rounds):
            for name in list(series)[:: 1 if r % 2 == 0 else -1]:  # A B, B A, A B, ...
                got = await timed(series[name], args.count)
                rounds[name].append(pct(got, 50))
                samples[name].extend(got)
        after = load_average()
    ratios = [e / v for v, e in zip(rounds["vector"], rounds["engram"], strict=True)]
    row = {"memories": args.memories, "corpus": args.corpus,
           **{f"{k}_p50_ms": round(pct(v, 50), 3) for k, v in samples.items()},
           **{f"{k}_p99_ms": round(pct(v, 99), 3) for k, v in samples.items()},
           "ratio_p50": round(pct(samples["engram"], 50) / pct(samples["vector"], 50), 3),
           "round_ratios": [round(x, 2) for x in ratios],
           "load_avg": f"{before} -> {after}"}  # fmt: skip
    print(json.dumps(row))


if __name__ == "__main__":
    asyncio.run(main())
