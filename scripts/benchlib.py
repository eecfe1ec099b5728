"""Shared pieces of the end-to-end benchmarks: a real engram server in this process, a signing client,
and same-run timing (interleaved rounds, medians) so co-tenant noise on a shared machine cancels out."""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp
import numpy as np
from aiohttp import web

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.credential import mint_space_credential
from engram.auth.crypto_keys import PrivateKey
from engram.auth.space_signature import sign_space_request
from engram.config import Settings
from engram.store import Embedding, MemoryWrite


def latent(n: int, d: int, seed: int) -> np.ndarray:
    """Deterministic unit vectors with 48-d latent structure plus noise: harder for ANN than clusters and
    closer to real sentence embeddings."""
    rng = np.random.default_rng(seed)
    basis = np.random.default_rng(54321).standard_normal((48, d)).astype(np.float32)
    out = np.empty((n, d), dtype=np.float32)
    for start in range(0, n, 50_000):
        m = min(50_000, n - start)
        x = rng.standard_normal((m, 48)).astype(np.float32) @ basis
        x += 0.3 * rng.standard_normal((m, d)).astype(np.float32)
        out[start : start + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def pct(samples: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples), q))


@dataclass
class Server:
    ctx: object
    base: str
    session: aiohttp.ClientSession
    holder: PrivateKey

    def signed(self, space: str) -> dict[str, str]:
        key = self.ctx.keyring.private_key(self.ctx.settings.service_did)
        token = mint_space_credential(
            key,
            issuer=self.ctx.settings.service_did,
            space=space,
            holder_did_key=self.holder.public_key.did_key,
            ttl=3600,
        )
        return sign_space_request(self.holder, token, self.ctx.settings.service_did)


@asynccontextmanager
async def engram_server(**changes):
    """engram on 127.0.0.1:<free port> plus a trivial `/bench/floor` route in the same app (the aiohttp
    floor: routing, middlewares, JSON response, nothing else)."""
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        settings = replace(
            Settings(
                data_dir=Path(tmp),
                service_did="did:web:bench.test",
                public_url="https://bench.test",
                search_rate=0,
            ),
            **changes,
        )
        app = await create_app(settings)

        async def floor(request: web.Request) -> web.Response:
            return web.json_response({"ok": True})

        app.router.add_get("/bench/floor", floor)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        async with aiohttp.ClientSession() as session:
            try:
                yield Server(
                    app[context_key], f"http://127.0.0.1:{port}", session, PrivateKey.generate("ES256")
                )
            finally:
                await runner.cleanup()


@asynccontextmanager
async def engram_serve_process(env: dict[str, str], settle_s: float = 0.0):
    """`engram serve` as its own process on a free loopback port; yields (base URL, pid) once healthy and
    `settle_s` later (the other serving processes finish starting meanwhile)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "engram",
        "serve",
        env={**env, "ENGRAM_PORT": str(port), "ENGRAM_PUBLIC_URL": base},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        async with aiohttp.ClientSession() as probe:
            for _ in range(600):
                try:
                    async with probe.get(f"{base}/xrpc/_health") as answer:
                        if answer.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
            else:
                raise RuntimeError("engram serve did not become healthy")
        await asyncio.sleep(settle_s)
        yield base, proc.pid
    finally:
        proc.terminate()
        await proc.wait()


def data_dir_settings(data_dir: Path, **changes) -> Settings:
    """Settings of a benchmark context opened on `data_dir`: rate limits off, and a first search waits for
    its index however long the build takes."""
    base = Settings(
        data_dir=data_dir,
        service_did="did:web:bench.test",
        public_url="https://bench.test",
        search_rate=0,
        load_wait_ms=600_000,
    )
    return replace(base, **changes)


async def seed(ctx, space: str, vectors: np.ndarray, spec, batch: int = 5000) -> list[str]:
    uris: list[str] = []
    author = ctx.settings.service_did
    for start in range(0, len(vectors), batch):
        items = [
            MemoryWrite(
                author=author,
                text=f"synthetic memory {start + i}",
                created_at="2026-01-01T00:00:00.000Z",
                embedding=Embedding(spec.model, spec.digest, spec.dims, v.astype(np.float16)),
            )
            for i, v in enumerate(vectors[start : start + batch])
        ]
        uris += [r.uri for r in await ctx.services.memories.write(space, items)]
    return uris


async def timed(fn: Callable[[int], Awaitable[object]], count: int) -> list[float]:
    """Milliseconds per call of fn(i) for i in range(count), run one after another (c=1)."""
    out = []
    for i in range(count):
        t0 = time.perf_counter()
        await fn(i)
        out.append((time.perf_counter() - t0) * 1000)
    return out


async def interleave(
    rounds: int, count: int, **series: Callable[[int], Awaitable[object]]
) -> dict[str, dict]:
    """A-B-C, C-B-A, ... for `rounds` rounds (alternating, so no series always runs in the same place of a
    round); per series the median over rounds of each round's p50/p99."""
    per_round: dict[str, list[tuple[float, float]]] = {name: [] for name in series}
    for round_no in range(rounds):
        for name, fn in list(series.items())[:: 1 if round_no % 2 == 0 else -1]:
            samples = await timed(fn, count)
            per_round[name].append((pct(samples, 50), pct(samples, 99)))
    return {
        name: {
            "p50_ms": statistics.median(p for p, _ in v),
            "p99_ms": statistics.median(p for _, p in v),
            "rounds_p50_ms": [round(p, 4) for p, _ in v],
        }
        for name, v in per_round.items()
    }


def load_average() -> str:
    try:
        return Path("/proc/loadavg").read_text().split(" ")[0]
    except OSError:
        return "?"


def threaded_qps(
    search: Callable[[np.ndarray], object], queries: np.ndarray, seconds: float, threads: int = 2
) -> float:
    """Calls per second of `threaded_rate`."""
    return threaded_rate(search, queries, seconds, threads)[0]


def threaded_rate(
    search: Callable[[np.ndarray], object], queries: np.ndarray, seconds: float, threads: int = 2
) -> tuple[float, float]:
    """(calls per second, CPU µs per call) of `threads` threads calling `search(query)` back to back for
    `seconds` (FAISS and the peers release the GIL), each pinned to one OpenMP thread as engram's workers
    are. The CPU is the threads' own (`time.thread_time`), so a server's CPU per request can be set beside
    it in the same run: on a shared machine the calls per second follow the co-tenants, the CPU much less."""
    import threading

    import faiss

    counts = [0] * threads
    cpu = [0.0] * threads
    stop = time.perf_counter() + seconds

    def run(n: int) -> None:
        faiss.omp_set_num_threads(1)
        i = n
        start = time.thread_time()
        while time.perf_counter() < stop:
            search(queries[i % len(queries)])
            counts[n] += 1
            i += 1
        cpu[n] = time.thread_time() - start

    workers = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    calls = sum(counts)
    return calls / (time.perf_counter() - t0), 1e6 * sum(cpu) / max(calls, 1)
