"""Engram's own ranking (EngramRanking, mode hybrid: both candidate sides, tuned convex fusion, restatement
check over the first 30, idf coverage for the confidence) against pure vector search (SearchService, what
searchMemories answers), both in-process through the service layer at 100k memories (docs/benchmarks.md).
Bar: p50 ratio <= 1.5.

`--corpus zipf` is bench_shims.py's space (generated vectors and Zipf-distributed words). `--corpus
docstrings` is real text: the first paragraphs of the installed packages' docstrings
(scripts/docstring_corpus.py; ~45k of them, so past that a memory joins two), each memory's vector the
`hashing:384` embedding of its text, and queries of 2-5 words cut from docstrings. The `hashing:384`
query embedder costs microseconds, so the ratio compares search work only. The series run A B, B A, ...
Besides wall time, each path's CPU time per query (every thread of the process) is reported: on a shared
machine it moves far less with the neighbours' load than the wall time does.

`--dump FILE` writes, before the timed rounds, every query's engram ranking in each mode (and with
`current`, a confidence floor and a short limit) as JSON: hits, scores, `why`, supersession, facts. The
docstring corpus's memories get fixed record keys, so two trees' dumps (this script run with PYTHONPATH
at either tree) are equal byte for byte exactly when the rankings are (docs/benchmarks.md).

    .venv/bin/python scripts/bench_ranking.py [--memories 100000] [--rounds 6] [--count 60] [--corpus docstrings] [--dump FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_shims import QUERIES, queries, seed_space
from benchlib import engram_server, load_average, pct, timed

from engram.service.hybrid import Scope, TextSearch
from engram.service.search import SearchQuery
from engram.store import Embedding, Memory, MemoryWrite, ModelSpec
from engram.store.tid import encode_tid

FIRST_TID_US = 1_700_000_000_000_000  # the memories' record keys: fixed, so two runs' dumps compare


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
                        rkey=encode_tid(FIRST_TID_US + start + i, 0),
                        embedding=Embedding(spec.model, spec.digest, spec.dims, v.astype(np.float16)))
            for i, (t, v) in enumerate(zip(chunk, vectors, strict=True))
        ]  # fmt: skip
        await ctx.services.memories.write(space, items)
    await ctx.services.search.warm(await ctx.services.spaces.require(space))
    await ctx.index.flush()
    return space


def plain(value):
    """A ranking as JSON-able data; a memory as its row id and URI (its other fields are the store's)."""
    if isinstance(value, Memory):
        return {"row_id": value.row_id, "uri": value.uri}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted(plain(v) for v in value)
    return value


async def dump(ctx, space, texts: list[str], path: Path) -> None:
    variants = [
        {"limit": 10},
        {"limit": 3},
        {"limit": 10, "current": True},
        {"limit": 5, "min_confidence": 0.3},
    ]
    out = []
    for mode in ("hybrid", "vector", "keyword"):
        for variant in variants:
            for text in texts:
                ranking = await ctx.services.ranking.run([Scope(space)], TextSearch(text, **variant), mode)
                out.append({"query": text, "mode": mode, **variant, "ranking": plain(ranking)})
    path.write_text(json.dumps(out, indent=0, sort_keys=True))


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--corpus", choices=["zipf", "docstrings"], default="zipf")
    parser.add_argument("--dump", type=Path, help="write every query's rankings here (JSON), then time")
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

        if args.dump:
            await dump(srv.ctx, space, texts, args.dump)
        series = {"vector": vector, "engram": engram}
        for fn in series.values():  # warm both paths (first-call caches) outside the timed rounds
            for i in range(QUERIES):
                await fn(i)
        before = load_average()
        rounds: dict[str, list[float]] = {name: [] for name in series}
        samples: dict[str, list[float]] = {name: [] for name in series}
        cpu: dict[str, float] = dict.fromkeys(series, 0.0)
        for r in range(args.rounds):
            for name in list(series)[:: 1 if r % 2 == 0 else -1]:  # A B, B A, A B, ...
                started = time.process_time()
                got = await timed(series[name], args.count)
                cpu[name] += time.process_time() - started
                rounds[name].append(pct(got, 50))
                samples[name].extend(got)
        after = load_average()
    ratios = [e / v for v, e in zip(rounds["vector"], rounds["engram"], strict=True)]
    row = {"memories": args.memories, "corpus": args.corpus,
           **{f"{k}_p50_ms": round(pct(v, 50), 3) for k, v in samples.items()},
           **{f"{k}_p99_ms": round(pct(v, 99), 3) for k, v in samples.items()},
           "ratio_p50": round(pct(samples["engram"], 50) / pct(samples["vector"], 50), 3),
           **{f"{k}_cpu_ms": round(1000 * v / (args.rounds * args.count), 3) for k, v in cpu.items()},
           "ratio_cpu": round(cpu["engram"] / cpu["vector"], 3),
           "round_ratios": [round(x, 2) for x in ratios],
           "load_avg": f"{before} -> {after}"}  # fmt: skip
    print(json.dumps(row))


if __name__ == "__main__":
    asyncio.run(main())
