"""Memory Bank shim query latency against the same search without the shim (docs/benchmarks.md).

10k one-chunk documents are upserted through the shim (hashing embedder, so the embedding is cheap and the
shim's own overhead is what the ratio shows). Then, interleaved in rounds:
  - shim: POST /memorybank/query-action, one query, top_k 3, API key auth (HTTP);
  - xrpc: the same search as signed garden.engram.searchMemories (q, the same user tag, limit 3) over HTTP;
  - service: the same search in-process through SearchService.search (no HTTP at all).
Both ratios use p50: shim / xrpc (the bar, same transport) and shim / service (HTTP included).

    .venv/bin/python scripts/bench_memorybank.py [--n 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import json

from benchlib import engram_server, interleave, load_average

from engram.compat.memorybank.translate import tag, tenant
from engram.service.apikeys import create_api_key
from engram.service.search import SearchQuery

_VOCABULARY = (
    "river mountain garden letter piano harbor winter lantern orchard meadow "
    "violin market forest candle bridge island castle thunder silver window"
)
WORDS = _VOCABULARY.split()


def text(i: int) -> str:
    return " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(12)) + f" note {i}."


async def run(n: int, rounds: int, count: int) -> dict:
    async with engram_server(embedder="hashing", text_search_rate=0, search_concurrency=64) as srv:
        space = await srv.ctx.services.spaces.create_hosted("bench")
        key, token = await create_api_key(srv.ctx.store, space.uri, ["read", "write"], "bench")
        auth = {"Authorization": f"Bearer {token}"}
        for start in range(0, n, 500):
            docs = [
                {"id": f"d{i}", "text": text(i), "user_id": "bench"}
                for i in range(start, min(n, start + 500))
            ]
            async with srv.session.post(
                f"{srv.base}/memorybank/upsert", json={"documents": docs}, headers=auth
            ) as r:
                assert r.status == 200, await r.text()
        queries = [" ".join(WORDS[(q * 5 + j) % len(WORDS)] for j in range(4)) for q in range(20)]
        user_tag = tag("user", tenant(str(key.id), "bench"))
        headers = srv.signed(space.uri)
        fresh = await srv.ctx.services.spaces.find(space.uri)

        async def shim(i: int):
            body = {"queries": [{"query": queries[i % 20], "user_id": "bench"}]}
            async with srv.session.post(f"{srv.base}/memorybank/query-action", json=body, headers=auth) as r:
                assert r.status == 200
                return await r.read()

        async def xrpc(i: int):
            params = {"space": space.uri, "q": queries[i % 20], "tags": user_tag, "limit": "3"}
            async with srv.session.get(
                f"{srv.base}/xrpc/garden.engram.searchMemories", params=params, headers=headers
            ) as r:
                assert r.status == 200, await r.text()
                return await r.read()

        async def service(i: int):
            return await srv.ctx.services.search.search(
                fresh, SearchQuery(q=queries[i % 20], tags=(user_tag,), limit=3)
            )

        for fn in (shim, xrpc, service):  # warm: index loaded, tokenizer and embedder ready
            await fn(0)
        series = await interleave(rounds, count, shim=shim, xrpc=xrpc, service=service)
    return {
        "memories": n,
        **{f"{name}_p50_ms": round(s["p50_ms"], 3) for name, s in series.items()},
        **{f"{name}_p99_ms": round(s["p99_ms"], 3) for name, s in series.items()},
        "shim_over_xrpc_p50": round(series["shim"]["p50_ms"] / series["xrpc"]["p50_ms"], 3),
        "shim_over_service_p50": round(series["shim"]["p50_ms"] / series["service"]["p50_ms"], 3),
        "load_average": load_average(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--count", type=int, default=60)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.n, args.rounds, args.count)), indent=2))


if __name__ == "__main__":
    main()
