"""A bounded loopback load generator: mixed signed traffic against a real engram, for a fixed time.

Traffic, per request drawn round-robin from this mix: vector search, text search (`q`), listMemories,
getMemory, a write through the Sim shim (`POST /api/memory`, API key) and a GPTBots shim search. It reports
QPS, p50/p99 per kind, the statuses seen, and the RSS of this process (which runs the server) before and
after. Every request goes to 127.0.0.1 and the run stops by itself after `--seconds`.

    .venv/bin/python scripts/load_test.py --seconds 30 --concurrency 32

tests/app/test_load_test.py runs a short variant in `make test` and checks that no answer is a 5xx and
every status is one the mix expects (no timing assertions).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp
import numpy as np

from engram.auth.crypto_keys import PrivateKey
from engram.auth.space_signature import sign_space_request
from engram.search.vectors import encode_query_vector
from engram.service import apikeys
from engram.spacehost.minting import mint_for_space
from engram.store import MemoryWrite

# Statuses a healthy engram may answer to this mix (rate limits may be on): anything else is a failure.
EXPECTED = {
    "vector_search": {200, 429},
    "text_search": {200, 429},
    "list": {200},
    "get": {200},
    "sim_write": {200, 201},
    "gptbots_search": {200, 429},
}
TEXTS = [
    "The deploy pipeline runs the migrations before the web tier restarts.",
    "Dana prefers pnpm over npm because lockfile diffs are smaller.",
    "Production Postgres runs version 16.2; staging is still on 15.4.",
    "The weekly sync moved from Monday to Tuesday at 10:00.",
    "Henrik approves every change to token handling in the auth gateway.",
]


@dataclass
class Target:
    base: str
    space: str
    reader_headers: dict[str, str]
    api_key: str
    memory_uris: list[str]
    query_vectors: list[str]
    model: str
    digest: str


@dataclass
class Report:
    seconds: float
    latencies: dict[str, list[float]] = field(default_factory=dict)
    statuses: dict[str, dict[int, int]] = field(default_factory=dict)
    rss_before_kib: int = 0
    rss_after_kib: int = 0

    def unexpected(self) -> dict[str, dict[int, int]]:
        return {
            kind: {s: n for s, n in seen.items() if s not in EXPECTED[kind]}
            for kind, seen in self.statuses.items()
            if set(seen) - EXPECTED[kind]
        }

    def summary(self) -> dict:
        total = sum(len(v) for v in self.latencies.values())
        kinds = {}
        for kind, samples in sorted(self.latencies.items()):
            ms = np.asarray(samples) * 1000
            kinds[kind] = {
                "count": len(samples),
                "p50_ms": round(float(np.percentile(ms, 50)), 2),
                "p99_ms": round(float(np.percentile(ms, 99)), 2),
                "statuses": self.statuses[kind],
            }
        return {
            "qps": round(total / self.seconds, 1),
            "requests": total,
            "kinds": kinds,
            "rss_kib": {"before": self.rss_before_kib, "after": self.rss_after_kib},
        }


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def prepare(ctx, base: str, memories: int = 200) -> Target:
    """A hosted space on the embedder engram runs (so `q` works), text memories, a Sim/GPTBots API key, and
    reader headers signed for engram (a credential from the authority key engram holds)."""
    space = await ctx.services.spaces.create_hosted(f"load-{int(time.time() * 1000)}")
    author = ctx.settings.service_did
    writes = [MemoryWrite(author=author, text=f"{TEXTS[i % len(TEXTS)]} (note {i})") for i in range(memories)]
    written = await ctx.services.memories.write(space.uri, writes)
    _key, token = await apikeys.create_api_key(ctx.store, space.uri, ("read", "write"), "load test")
    holder = PrivateKey.generate("ES256")
    credential = mint_for_space(ctx.keyring, space.uri, holder.public_key.did_key, ttl=3600)
    active = space.config.active
    vectors = ctx.embedder.embed([f"query {i} {TEXTS[i % len(TEXTS)]}" for i in range(16)], "query")
    return Target(
        base=base,
        space=space.uri,
        reader_headers=sign_space_request(holder, credential, ctx.settings.service_did),
        api_key=token,
        memory_uris=[m.uri for m in written],
        query_vectors=[encode_query_vector(np.asarray(v, dtype=np.float32)) for v in vectors],
        model=active.model,
        digest=active.digest,
    )


def _requests(t: Target):
    """An endless round-robin of (kind, method, url, kwargs)."""
    xrpc = f"{t.base}/xrpc/garden.engram."
    bearer = {"Authorization": f"Bearer {t.api_key}"}
    for i in itertools.count():
        vector = t.query_vectors[i % len(t.query_vectors)]
        search = {
            "space": t.space,
            "vector": vector,
            "model": t.model,
            "modelDigest": t.digest,
            "limit": "10",
        }
        yield "vector_search", "GET", xrpc + "searchMemories", {"params": search, "headers": t.reader_headers}
        text = {"space": t.space, "q": TEXTS[i % len(TEXTS)][:40], "limit": "5"}
        yield "text_search", "GET", xrpc + "searchMemories", {"params": text, "headers": t.reader_headers}
        yield (
            "list",
            "GET",
            xrpc + "listMemories",
            {"params": {"space": t.space}, "headers": t.reader_headers},
        )
        uri = t.memory_uris[i % len(t.memory_uris)]
        params = {"space": t.space, "uri": uri}
        yield "get", "GET", xrpc + "getMemory", {"params": params, "headers": t.reader_headers}
        body = {
            "key": f"load-{i % 8}",
            "type": "agent",
            "data": {"role": "user", "content": f"load test message {i}"},
            "workflowId": "load-test",
        }
        yield "sim_write", "POST", f"{t.base}/api/memory", {"json": body, "headers": bearer}
        match = {"prompt": TEXTS[i % len(TEXTS)][:30], "top_k": 5, "embedding_rate": 0.5}
        yield "gptbots_search", "POST", f"{t.base}/v1/vector/match", {"json": match, "headers": bearer}


async def run_load(target: Target, *, seconds: float, concurrency: int) -> Report:
    report = Report(seconds=seconds, rss_before_kib=rss_kib())
    stream = _requests(target)
    stop = time.perf_counter() + seconds
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:

        async def worker() -> None:
            while time.perf_counter() < stop:
                kind, method, url, kwargs = next(stream)
                t0 = time.perf_counter()
                async with session.request(method, url, **kwargs) as r:
                    await r.read()
                report.latencies.setdefault(kind, []).append(time.perf_counter() - t0)
                seen = report.statuses.setdefault(kind, {})
                seen[r.status] = seen.get(r.status, 0) + 1

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        report.seconds = time.perf_counter() - t0
    report.rss_after_kib = rss_kib()
    return report


async def main_async(args: argparse.Namespace) -> int:
    from aiohttp import web

    from engram.app import create_app
    from engram.app_keys import context_key
    from engram.config import read_env

    with tempfile.TemporaryDirectory(prefix="engram-load-") as tmp:
        env = {k: v for k, v in os.environ.items() if k.startswith("ENGRAM_")}
        # Rate limits and concurrency caps off unless set in the environment: the point is the server's
        # capacity; with them on, 429s are expected answers and the test variant accepts them.
        settings = replace(
            read_env(env),
            data_dir=Path(tmp),
            search_rate=float(env.get("ENGRAM_SEARCH_RATE", 0)),
            text_search_rate=float(env.get("ENGRAM_TEXT_SEARCH_RATE", 0)),
            search_concurrency=int(env.get("ENGRAM_SEARCH_CONCURRENCY", 0)),
        )
        settings = replace(settings, embed_concurrency=max(settings.embed_concurrency, args.concurrency))
        app = await create_app(settings)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        try:
            port = site._server.sockets[0].getsockname()[1]
            target = await prepare(app[context_key], f"http://127.0.0.1:{port}", args.memories)
            report = await run_load(target, seconds=args.seconds, concurrency=args.concurrency)
        finally:
            await runner.cleanup()
    print(json.dumps(report.summary(), indent=2))
    bad = report.unexpected()
    if bad:
        print(f"unexpected statuses: {bad}", file=sys.stderr)
    return 1 if bad else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--memories", type=int, default=200)
    sys.exit(asyncio.run(main_async(parser.parse_args())))


if __name__ == "__main__":
    main()
