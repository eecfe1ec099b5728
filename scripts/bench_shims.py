"""REST shim benchmarks, each ratio measured side by side in one run (docs/benchmarks.md).

1. Shim overhead at 10k memories: GPTBots `POST /v1/vector/match` over HTTP (API-key lookup, body parsing,
   scope building, JSON answer) against the very same search called in-process through the service layer
   (`ctx.services.hybrid.run`), for semantic-only (embedding_rate 1) and hybrid (0.5) queries.
   Bar: shim p50 / service p50 <= 1.3.
2. Hybrid against vector-only at 100k memories, both through the service layer: weight 0.5 (vector and
   BM25 candidates, both scores for each, fusion) against weight 1 (vector only). Bar: <= 1.5.

Memories carry generated vectors (d=384, the "latent" generator) under the query embedder's model key,
and generated text: 12 words drawn from a Zipf-distributed 5,000-word vocabulary, so a query word's posting
list is as long as in real text (common words match thousands of memories). Queries are 3 words from the
same distribution. The query embedder is `hashing:384` (microseconds), so embedding cost does not dilute
the ratios: they compare search work only.

    .venv/bin/python scripts/bench_shims.py [--small 10000] [--large 100000] [--rounds 5] [--count 60]
    .venv/bin/python scripts/bench_shims.py --embedder builtin --large 0   # part 1 with the default model
"""

from __future__ import annotations

import argparse
import asyncio
import json

import numpy as np
from benchlib import engram_server, interleave, latent, load_average

from engram.service import apikeys
from engram.service.hybrid import Scope, TextSearch
from engram.store import Embedding, MemoryWrite, ModelSpec

QUERIES = 40


def vocabulary(size: int = 5000) -> list[str]:
    rng = np.random.default_rng(7)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return ["".join(rng.choice(letters, int(rng.integers(4, 10)))) for _ in range(size)]


def zipf_words(rng: np.random.Generator, words: list[str], n: int) -> list[str]:
    ranks = np.minimum(rng.zipf(1.3, n), len(words)) - 1
    return [words[r] for r in ranks]


async def seed_space(ctx, name: str, n: int, spec: ModelSpec) -> str:
    space = (await ctx.services.spaces.create_hosted(name, model=spec)).uri
    vectors, words, rng = latent(n, spec.dims, seed=1), vocabulary(), np.random.default_rng(3)
    author = ctx.settings.service_did
    for start in range(0, n, 5000):
        items = [
            MemoryWrite(
                author=author,
                text=" ".join(zipf_words(rng, words, 12)),
                created_at="2026-01-01T00:00:00.000Z",
                embedding=Embedding(spec.model, spec.digest, spec.dims, v.astype(np.float16)),
            )
            for v in vectors[start : start + 5000]
        ]
        await ctx.services.memories.write(space, items)
    await ctx.services.search.warm(await ctx.services.spaces.require(space))
    await ctx.index.flush()
    return space


def queries() -> list[str]:
    rng, words = np.random.default_rng(11), vocabulary()
    return [" ".join(zipf_words(rng, words, 3)) for _ in range(QUERIES)]


async def shim_overhead(srv, spec: ModelSpec, n: int, rounds: int, count: int) -> list[dict]:
    space_uri = await seed_space(srv.ctx, "shim-bench", n, spec)
    space = await srv.ctx.services.spaces.require(space_uri)
    _, token = await apikeys.create_api_key(srv.ctx.store, space_uri, ["read"], "bench")
    headers = {"Authorization": f"Bearer {token}"}
    texts, rows = queries(), []
    for rate in (1.0, 0.5):

        async def shim(i: int, rate=rate) -> None:
            body = {"prompt": texts[i % QUERIES], "top_k": 10, "embedding_rate": rate}
            async with srv.session.post(f"{srv.base}/v1/vector/match", json=body, headers=headers) as r:
                assert r.status == 200, await r.text()
                await r.read()

        async def service(i: int, rate=rate) -> None:
            await srv.ctx.services.hybrid.run(
                [Scope(space)], TextSearch(texts[i % QUERIES], limit=10, weight=rate)
            )

        before = load_average()
        t = await interleave(rounds, count, service=service, shim=shim)
        rows.append(
            {
                "memories": n,
                "embedding_rate": rate,
                "service_p50_ms": round(t["service"]["p50_ms"], 3),
                "shim_p50_ms": round(t["shim"]["p50_ms"], 3),
                "service_p99_ms": round(t["service"]["p99_ms"], 3),
                "shim_p99_ms": round(t["shim"]["p99_ms"], 3),
                "ratio_p50": round(t["shim"]["p50_ms"] / t["service"]["p50_ms"], 3),
                "load_avg": f"{before} -> {load_average()}",
            }
        )
    return rows


async def hybrid_cost(srv, spec: ModelSpec, n: int, rounds: int, count: int) -> dict:
    space = await srv.ctx.services.spaces.require(await seed_space(srv.ctx, "hybrid-bench", n, spec))
    texts = queries()

    def search(weight: float):
        async def run(i: int) -> None:
            await srv.ctx.services.hybrid.run(
                [Scope(space)], TextSearch(texts[i % QUERIES], limit=10, weight=weight)
            )

        return run

    before = load_average()
    t = await interleave(rounds, count, vector_only=search(1.0), hybrid=search(0.5), keyword_only=search(0.0))
    return {
        "memories": n,
        **{f"{k}_p50_ms": round(v["p50_ms"], 3) for k, v in t.items()},
        **{f"{k}_p99_ms": round(v["p99_ms"], 3) for k, v in t.items()},
        "ratio_p50": round(t["hybrid"]["p50_ms"] / t["vector_only"]["p50_ms"], 3),
        "load_avg": f"{before} -> {load_average()}",
    }


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument(
        "--embedder", default="hashing:384", help="query embedder (builtin: the default model, ~5 ms a query)"
    )
    args = parser.parse_args()
    async with engram_server(embedder=args.embedder, text_search_rate=0, search_concurrency=64) as srv:
        e = srv.ctx.embedder
        spec = ModelSpec(e.name, e.digest, e.dims)
        overhead = await shim_overhead(srv, spec, args.small, args.rounds, args.count)
        hybrid = await hybrid_cost(srv, spec, args.large, args.rounds, args.count) if args.large else None
    for row in [*overhead, *([hybrid] if hybrid else [])]:
        print(json.dumps(row))
    print("\n| memories | embedding_rate | service p50 / p99 ms | shim p50 / p99 ms | shim ÷ service, p50 |")
    print("|---|---|---|---|---|")
    for r in overhead:
        print(
            f"| {r['memories']:,} | {r['embedding_rate']} | {r['service_p50_ms']:.2f} / {r['service_p99_ms']:.2f} "
            f"| {r['shim_p50_ms']:.2f} / {r['shim_p99_ms']:.2f} | **{r['ratio_p50']:.2f}** |"
        )
    h = hybrid
    if h is None:
        return
    print(
        "\n| memories | vector-only p50 / p99 ms | hybrid p50 / p99 ms | keyword-only p50 / p99 ms | hybrid ÷ vector, p50 |"
    )
    print("|---|---|---|---|---|")
    print(
        f"| {h['memories']:,} | {h['vector_only_p50_ms']:.2f} / {h['vector_only_p99_ms']:.2f} "
        f"| {h['hybrid_p50_ms']:.2f} / {h['hybrid_p99_ms']:.2f} "
        f"| {h['keyword_only_p50_ms']:.2f} / {h['keyword_only_p99_ms']:.2f} | **{h['ratio_p50']:.2f}** |"
    )


if __name__ == "__main__":
    asyncio.run(main())
