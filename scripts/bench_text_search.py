"""Text-path benchmark: searchMemories with `q` (engram embeds it) against its parts, in one run.

Reports, interleaved over rounds on the same server and space (10k memories of the built-in model):
  - bare embedding: the built-in embedder on one query, in-process, one thread (what the text path adds);
  - vector path: signed searchMemories over HTTP with the query's vector (what a caller embedding itself pays);
  - text path: signed searchMemories over HTTP with `q` only;
  - ratio = text p50 / (bare embedding p50 + vector path p50). The issue's bar is <= 1.3.

    .venv/bin/python scripts/bench_text_search.py [--memories 10000] [--rounds 5] [--count 60]
"""

from __future__ import annotations

import argparse
import asyncio
import json

from benchlib import engram_server, interleave, latent, load_average, seed

from engram.embed.text import round_through_f16
from engram.search.vectors import encode_query_vector
from engram.store import ModelSpec

QUERIES = [
    "which package manager does Dana prefer",
    "postgres version in production",
    "who approves auth changes",
    "when does the passport expire",
    "why were customers billed twice",
    "weekly sync meeting time",
    "how do we deploy the web dashboard",
    "favourite coffee order",
    "what broke the build last week",
    "where are the staging credentials kept",
    "which team owns billing",
    "book recommendations for the trip",
    "rate limits of the payments API",
    "how to rotate the signing key",
    "preferred code review style",
    "when is the next release",
    "who is on call this weekend",
    "what is the retry policy for webhooks",
    "how much memory does the search node need",
    "which editor does Priya use",
]


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--count", type=int, default=60)
    args = parser.parse_args()

    async with engram_server(embedder="builtin", text_search_rate=0, embed_concurrency=4) as srv:
        embedder = srv.ctx.embedder
        spec = ModelSpec(embedder.name, embedder.digest, embedder.dims)
        space = (await srv.ctx.services.spaces.create_hosted("bench")).uri
        # Search cost does not depend on what the vectors mean, so the space holds generated vectors under the
        # built-in model's key (embedding 10k texts would only make the set-up slow).
        await seed(srv.ctx, space, latent(args.memories, spec.dims, seed=1), spec)
        headers = srv.signed(space)
        url = f"{srv.base}/xrpc/garden.engram.searchMemories"
        vectors = [
            round_through_f16(embedder.embed([q], "query")[0]) for q in QUERIES
        ]  # one by one, as served
        vector_params = [
            {
                "space": space,
                "vector": encode_query_vector(v),
                "model": spec.model,
                "modelDigest": spec.digest,
            }
            for v in vectors
        ]
        text_params = [{"space": space, "q": q} for q in QUERIES]
        async with srv.session.post(
            f"{srv.base}/xrpc/garden.engram.warmSpace", json={"space": space}, headers=headers
        ) as r:
            assert r.status == 200
        await srv.ctx.index.flush()

        # The text path must rank exactly as the vector path does for the same query.
        for vp, tp in zip(vector_params, text_params, strict=True):
            async with (
                srv.session.get(url, params=vp, headers=headers) as r1,
                srv.session.get(url, params=tp, headers=headers) as r2,
            ):
                a, b = await r1.json(), await r2.json()
                assert a == b, (r1.status, r2.status, str(a)[:300], str(b)[:300])

        async def bare_embedding(i: int) -> None:
            embedder.embed([QUERIES[i % len(QUERIES)]], "query")

        async def vector_path(i: int) -> None:
            async with srv.session.get(url, params=vector_params[i % len(QUERIES)], headers=headers) as r:
                assert r.status == 200
                await r.read()

        async def text_path(i: int) -> None:
            async with srv.session.get(url, params=text_params[i % len(QUERIES)], headers=headers) as r:
                assert r.status == 200, await r.text()
                await r.read()

        load_before = load_average()
        t = await interleave(
            args.rounds,
            args.count,
            bare_embedding=bare_embedding,
            vector_path=vector_path,
            text_path=text_path,
        )
        e, v, x = t["bare_embedding"]["p50_ms"], t["vector_path"]["p50_ms"], t["text_path"]["p50_ms"]
        result = {
            "memories": args.memories,
            "model": spec.model,
            **{f"{name}_p50_ms": round(s["p50_ms"], 3) for name, s in t.items()},
            **{f"{name}_p99_ms": round(s["p99_ms"], 3) for name, s in t.items()},
            "ratio_p50": round(x / (e + v), 3),
            "load_avg": f"{load_before} -> {load_average()}",
        }
        print(json.dumps(result))
        print(
            "\n| memories | bare embedding p50 ms | vector path p50 ms | text path p50 / p99 ms | ratio p50 |"
        )
        print("|---|---|---|---|---|")
        print(
            f"| {args.memories:,} | {e:.2f} | {v:.2f} | {x:.2f} / {t['text_path']['p99_ms']:.2f} "
            f"| {result['ratio_p50']:.2f} |"
        )


if __name__ == "__main__":
    asyncio.run(main())
