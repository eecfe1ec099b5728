"""MCP `recall` over stdio and over streamable HTTP against the same search through the service layer.

One run, interleaved over rounds, on one data dir holding a 10k-memory space of the built-in model:
  - service: `ctx.services.search.search(space, SearchQuery(q=...))` in-process (embeds the query, searches);
  - http: the SDK's client calling `recall` (mode vector) on `/mcp` of an `engram serve` subprocess over
    the same data dir, with an API key;
  - stdio: the SDK's client calling `recall` on an `engram mcp --key` subprocess over the same data dir;
  - ratio = MCP p50 / service p50. The issue's bar is <= 1.5.

Both MCP servers run in their own process, as they do for real, so the client's own work (in this
process) does not queue behind the server's on one event loop; each embeds the query with the same
built-in model on the same machine as the in-process reference does.

    .venv/bin/python scripts/bench_mcp.py [--memories 10000] [--rounds 5] [--count 60]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from contextlib import AsyncExitStack

import httpx2
from bench_text_search import QUERIES
from benchlib import engram_serve_process, engram_server, interleave, latent, load_average, seed
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from engram.mcp.http import McpEndpoint
from engram.service import apikeys
from engram.service.search import SearchQuery
from engram.store import ModelSpec

# The server-side share of an HTTP call: time spent in /mcp's handler (credential check, bridge, the SDK's
# transport and tool, the search, the answer), measured in this process around McpEndpoint.handle.
SERVER_SIDE_MS: list[float] = []
_handle = McpEndpoint.handle


async def _timed_handle(self, request):
    start = time.perf_counter()
    try:
        return await _handle(self, request)
    finally:
        SERVER_SIDE_MS.append((time.perf_counter() - start) * 1000)


McpEndpoint.handle = _timed_handle  # before engram_server builds its app, so its /mcp route is the timed one


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--count", type=int, default=60)
    args = parser.parse_args()

    async with (
        engram_server(
            embedder="builtin", text_search_rate=0, key_text_search_rate=0, embed_concurrency=4
        ) as srv,
        AsyncExitStack() as stack,
    ):
        ctx = srv.ctx
        spec = ModelSpec(ctx.embedder.name, ctx.embedder.digest, ctx.embedder.dims)
        space = await ctx.services.spaces.create_hosted("bench")
        # Search cost does not depend on what the vectors mean: generated vectors under the built-in
        # model's key.
        await seed(ctx, space.uri, latent(args.memories, spec.dims, seed=1), spec)
        _, token = await apikeys.create_api_key(ctx.store, space.uri, ["read"], "bench")
        await ctx.services.search.warm(await ctx.services.spaces.find(space.uri))
        await ctx.index.flush()  # persisted, so the stdio process loads it instead of building it

        bearer = {"Authorization": f"Bearer {token}"}
        local_http = await stack.enter_async_context(httpx2.AsyncClient(headers=bearer))
        over_local = await stack.enter_async_context(
            Client(streamable_http_client(f"{srv.base}/mcp", http_client=local_http))
        )
        env = {
            "ENGRAM_DATA_DIR": str(ctx.settings.data_dir),
            "ENGRAM_SERVICE_DID": ctx.settings.service_did,
            "ENGRAM_PUBLIC_URL": ctx.settings.public_url,
            "ENGRAM_EMBEDDER": "builtin",
            "ENGRAM_TEXT_SEARCH_RATE": "0",
            "ENGRAM_KEY_TEXT_SEARCH_RATE": "0",  # recall spends the key's budget (docs/mcp.md#limits-for-agents)
            "ENGRAM_SEARCH_RATE": "0",
            "ENGRAM_LOG_LEVEL": "warning",
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
        }
        stdio_params = StdioServerParameters(
            command=sys.executable, args=["-m", "engram", "mcp", "--key", token], env=env
        )
        over_stdio = await stack.enter_async_context(Client(stdio_params))
        base, _ = await stack.enter_async_context(engram_serve_process(env))
        http = await stack.enter_async_context(httpx2.AsyncClient(headers=bearer))
        over_http = await stack.enter_async_context(
            Client(streamable_http_client(f"{base}/mcp", http_client=http))
        )

        current = await ctx.services.spaces.find(space.uri)

        async def service(i: int) -> None:
            await ctx.services.search.search(current, SearchQuery(q=QUERIES[i % len(QUERIES)], limit=10))

        def recall_via(client):
            async def call(i: int) -> None:
                result = await client.call_tool(
                    "recall", {"query": QUERIES[i % len(QUERIES)], "mode": "vector"}
                )
                assert not result.is_error and len(result.structured_content["results"]) == 10, result.content

            return call

        # Same answers through every path, and everything warm before timing.
        for i, query in enumerate(QUERIES):
            direct = await ctx.services.search.search(current, SearchQuery(q=query, limit=10))
            for client in (over_http, over_stdio, over_local):
                hits = (
                    await client.call_tool("recall", {"query": query, "mode": "vector"})
                ).structured_content
                assert [h["uri"] for h in hits["results"]] == [m.uri for m, _ in direct.hits], (i, query)

        local_recall = recall_via(over_local)

        async def http_server_side(i: int) -> None:
            """The same call to this process's /mcp; what is kept is the server's own time (handle)."""
            await local_recall(i)

        load_before = load_average()
        SERVER_SIDE_MS.clear()
        t = await interleave(
            args.rounds,
            args.count,
            service=service,
            http=recall_via(over_http),
            stdio=recall_via(over_stdio),
            http_local=http_server_side,
        )
        server_side = statistics.median(SERVER_SIDE_MS)
        s, h, o = t["service"]["p50_ms"], t["http"]["p50_ms"], t["stdio"]["p50_ms"]
        result = {
            "memories": args.memories,
            "model": spec.model,
            **{f"{name}_p50_ms": round(v["p50_ms"], 3) for name, v in t.items()},
            **{f"{name}_p99_ms": round(v["p99_ms"], 3) for name, v in t.items()},
            "http_server_side_p50_ms": round(server_side, 3),
            "http_server_side_ratio_p50": round(server_side / s, 3),
            "http_ratio_p50": round(h / s, 3),
            "stdio_ratio_p50": round(o / s, 3),
            "load_avg": f"{load_before} -> {load_average()}",
        }
        print(json.dumps(result))
        print(
            "\n| memories | service p50 / p99 ms | HTTP recall p50 / p99 ms | stdio recall p50 / p99 ms "
            "| HTTP ÷ service | HTTP server side ÷ service | stdio ÷ service |"
        )
        print("|---|---|---|---|---|---|---|")
        print(
            f"| {args.memories:,} | {s:.2f} / {t['service']['p99_ms']:.2f} "
            f"| {h:.2f} / {t['http']['p99_ms']:.2f} "
            f"| {o:.2f} / {t['stdio']['p99_ms']:.2f} | {result['http_ratio_p50']:.2f} "
            f"| {result['http_server_side_ratio_p50']:.2f} | {result['stdio_ratio_p50']:.2f} |"
        )


if __name__ == "__main__":
    asyncio.run(main())
