"""What the HTTP floor is made of (docs/benchmarks.md#where-a-10k-search-spends-its-cpu).

Four servers answer the same tiny JSON to `GET /xrpc/_health`, each in its own process on uvloop, and wrk
drives each in turn at c=32 (alternating rounds, A B C D, D C B A, ...). Per server: QPS and the server's CPU
per request (user + system from /proc, so co-tenants change the QPS much more than the cost):

- `raw`: an asyncio Protocol feeding aiohttp's C HTTP parser (`aiohttp._http_parser.HttpRequestParser`),
  answering one prebuilt response per parsed request: the socket, the loop and the parser, nothing else;
- `server`: aiohttp's low-level server (`aiohttp.web.Server`) with a handler returning a `web.Response`: no
  application, router, middlewares or signals;
- `app`: a `web.Application` with that one route and no middlewares;
- `app5`: the same with five middlewares that only pass the request on (engram's app has five);
- `engram`: `engram serve` (this tree, one process, access log at warning), its own `/xrpc/_health`.

`--search` measures the other end instead: the least a Python signed search can cost on this machine.
`raw-search` is the `raw` server answering `searchMemories` query strings from a 10k index with engram's own
pieces and nothing else: the vector decoded (`decode_query_vector`), searches queued while a worker is busy
joining one batch as in engram (two worker threads, `SpaceIndex.search_many`: the batched scan and the exact
re-score), the answer (ten hits of fixed text, their row ids and similarities) rendered with orjson and
written on the loop. No auth, routing, limits, metrics, timeouts or store. It runs beside `engram serve` on
the same 10k space (`scripts/bench_throughput.py`'s seeding), both driven by wrk with the same signed paths.

    .venv/bin/python scripts/bench_http_floor.py --seconds 4 --rounds 4
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
BODY = b'{"version":"0"}'
MODES = ("raw", "server", "app", "app5", "engram")


def _raw_response() -> bytes:
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\n"
        f"Content-Length: {len(BODY)}\r\nDate: Wed, 02 Dec 2026 00:00:00 GMT\r\nServer: raw\r\n\r\n"
    )
    return head.encode("ascii") + BODY


async def serve_raw(port: int) -> None:
    from aiohttp._http_parser import HttpRequestParser  # the C parser aiohttp's web layer uses

    loop = asyncio.get_running_loop()
    response = _raw_response()

    class Raw(asyncio.Protocol):
        def connection_made(self, transport) -> None:
            self.transport = transport
            self.parser = HttpRequestParser(self, loop, 2**16)

        def data_received(self, data: bytes) -> None:
            messages, _upgraded, _tail = self.parser.feed_data(data)
            for _message, _payload in messages:
                self.transport.write(response)

    server = await loop.create_server(Raw, "127.0.0.1", port)
    await server.serve_forever()


async def serve_raw_search(port: int) -> None:
    """`raw-search`: see the module docstring. Batches form as in engram/search/search_job.py."""
    import queue
    import threading
    from urllib.parse import parse_qs

    import numpy as np
    import orjson
    from aiohttp._http_parser import HttpRequestParser
    from benchlib import latent

    from engram.search.index import IndexTuning, SpaceIndex
    from engram.search.rows import IndexRows
    from engram.search.vectors import decode_query_vector, similarities_permille

    n = 10_000
    vectors = latent(n, 384, seed=1).astype(np.float16)
    rows = IndexRows(np.arange(1, n + 1, dtype=np.int64), vectors, ["did:plc:a"] * n, np.zeros(n, np.int64))
    index = SpaceIndex.build(rows, 384, 1, IndexTuning(exact_max=1_000_000))
    loop = asyncio.get_running_loop()
    work: queue.SimpleQueue = queue.SimpleQueue()
    queued: list | None = None  # the batch waiting for a worker, which new searches join
    lock = threading.Lock()

    def answer(batch: list, results: list) -> None:
        for (transport, _q), result in zip(batch, results, strict=True):
            if transport.is_closing():  # wrk hung up at the end of its round
                continue
            hits = [
                {"uri": f"at://did:plc:a/garden.engram.memory/{r}", "text": "a memory", "similarity": s}
                for r, s in zip(result.row_ids.tolist(), similarities_permille(result.scores), strict=True)
            ]
            body = orjson.dumps({"memories": hits})
            head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            transport.write(head.encode() + body)

    def worker() -> None:
        nonlocal queued
        while True:
            batch = work.get()
            with lock:
                if queued is batch:
                    queued = None
            results = index.search_many(np.stack([q for _, q in batch]), [10] * len(batch))
            loop.call_soon_threadsafe(answer, batch, results)

    for _ in range(2):
        threading.Thread(target=worker, daemon=True).start()

    class RawSearch(asyncio.Protocol):
        def connection_made(self, transport) -> None:
            self.transport = transport
            self.parser = HttpRequestParser(self, loop, 2**16, max_line_size=2**16)

        def data_received(self, data: bytes) -> None:
            nonlocal queued
            messages, _upgraded, _tail = self.parser.feed_data(data)
            for message, _payload in messages:
                query = parse_qs(message.path.partition("?")[2])
                item = (self.transport, decode_query_vector(query["vector"][0]))
                with lock:
                    if queued is not None:
                        queued.append(item)
                        continue
                    queued = [item]
                work.put(queued)

    server = await loop.create_server(RawSearch, "127.0.0.1", port)
    await server.serve_forever()


async def serve_aiohttp(port: int, mode: str) -> None:
    from aiohttp import web

    async def health(request: web.BaseRequest) -> web.Response:
        return web.Response(body=BODY, content_type="application/json")

    if mode == "server":
        runner: web.BaseRunner = web.ServerRunner(web.Server(health), access_log=None)
    else:

        @web.middleware
        async def passing(request: web.Request, handler) -> web.StreamResponse:
            return await handler(request)

        app = web.Application(middlewares=[passing] * (5 if mode == "app5" else 0))
        app.router.add_get("/xrpc/_health", health)
        runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    await asyncio.Event().wait()


def bench_search(args: argparse.Namespace) -> None:
    """`--search`: raw-search beside `engram serve` on the same 10k space, wrk on the same signed paths."""
    sys.path.insert(0, str(HERE))
    import wrk_client
    from bench_throughput import _round_order, cpu_seconds, seed_data_dir, serve_env

    loads = [Path("/proc/loadavg").read_text().split()[0]]
    with tempfile.TemporaryDirectory(prefix="engram-floor-") as tmp:
        env = serve_env(tmp) | {
            "ENGRAM_PROCESSES": "1",
            "ENGRAM_PORT": "18820",
            "PYTHONPATH": str(HERE.parent),
        }
        material = asyncio.run(seed_data_dir(Path(tmp) / "data", env, 10_000))
        engram = subprocess.Popen([sys.executable, "-m", "engram", "serve"], env=env, cwd=tmp)
        raw = subprocess.Popen([sys.executable, __file__, "serve", "raw-search", "18821"], env=env)
        servers = [("engram", engram, 18820), ("raw-search", raw, 18821)]
        results: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in servers}
        loop_us: dict[str, list[float]] = {name: [] for name, _, _ in servers}
        try:
            for _name, _proc, port in servers:
                target = {"url": f"http://127.0.0.1:{port}/xrpc/garden.engram.searchMemories", **material}
                for _ in range(400):
                    with contextlib.suppress(subprocess.CalledProcessError, ValueError):
                        if wrk_client.drive_wrk(target, 4, 1)["statuses"].get(200):  # engram loads its index
                            break
                    time.sleep(0.5)
            for round_no in range(args.rounds):
                for n in _round_order(len(servers), round_no):
                    name, proc, port = servers[n]
                    target = {"url": f"http://127.0.0.1:{port}/xrpc/garden.engram.searchMemories", **material}
                    cpu0, loop0 = cpu_seconds(proc.pid), _loop_seconds(proc.pid)
                    result = wrk_client.drive_wrk(target, args.concurrency, args.seconds)
                    served = max(result["statuses"].get(200, 0), 1)
                    results[name].append((result["qps"], 1e6 * (cpu_seconds(proc.pid) - cpu0) / served))
                    loop_us[name].append(1e6 * (_loop_seconds(proc.pid) - loop0) / served)
        finally:
            for _name, proc, _port in servers:
                proc.terminate()
                proc.wait(timeout=30)
    _print(args, loads, results)
    for name, rounds in loop_us.items():
        print(f"{name}: of it on the event loop's thread {statistics.median(rounds):.0f} µs/request")


def _loop_seconds(pid: int) -> float:
    """CPU seconds of a process's main thread (its event loop), from /proc/<pid>/task/<pid>/stat."""
    fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _print(args: argparse.Namespace, loads: list[str], results: dict[str, list[tuple[float, float]]]) -> None:
    loads.append(Path("/proc/loadavg").read_text().split()[0])
    print(f"c={args.concurrency}, {args.rounds} rounds of {args.seconds} s, load {loads[0]} -> {loads[1]}")
    for mode, rounds in results.items():
        qps = statistics.median(q for q, _ in rounds)
        cpu = statistics.median(c for _, c in rounds)
        print(
            f"{mode:10s} {qps:7.0f} QPS  server CPU {cpu:5.1f} µs/request (rounds {[round(c) for _, c in rounds]})"
        )
    print(json.dumps({m: [[round(q), round(c, 1)] for q, c in r] for m, r in results.items()}))


def start(mode: str, port: int, tmp: str) -> subprocess.Popen:
    if mode != "engram":
        return subprocess.Popen([sys.executable, __file__, "serve", mode, str(port)])
    sys.path.insert(0, str(HERE))
    from bench_throughput import serve_env

    env = serve_env(tmp) | {"ENGRAM_PROCESSES": "1", "ENGRAM_PORT": str(port)}
    env["PYTHONPATH"] = str(HERE.parent)
    return subprocess.Popen([sys.executable, "-m", "engram", "serve"], env=env, cwd=tmp)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", nargs="*", help="serve MODE PORT (internal)")
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--search", action="store_true", help="raw-search beside engram serve (see above)")
    args = parser.parse_args()
    if args.what[:1] == ["serve"]:
        import uvloop

        sys.path.insert(0, str(HERE))
        mode, port = args.what[1], int(args.what[2])
        if mode == "raw-search":
            uvloop.run(serve_raw_search(port))
        else:
            uvloop.run(serve_raw(port) if mode == "raw" else serve_aiohttp(port, mode))
        return
    if args.search:
        bench_search(args)
        return
    sys.path.insert(0, str(HERE))
    import wrk_client
    from bench_throughput import _round_order, cpu_seconds

    loads = [Path("/proc/loadavg").read_text().split()[0]]
    with tempfile.TemporaryDirectory(prefix="engram-floor-") as tmp:
        servers = [(mode, start(mode, 18800 + n, tmp), 18800 + n) for n, mode in enumerate(args.modes)]
        try:
            for _mode, _proc, port in servers:
                for _ in range(400):
                    try:
                        urllib.request.urlopen(f"http://127.0.0.1:{port}/xrpc/_health")
                        break
                    except OSError:
                        time.sleep(0.3)
            results: dict[str, list[tuple[float, float]]] = {mode: [] for mode in args.modes}
            for round_no in range(args.rounds):
                for n in _round_order(len(servers), round_no):
                    mode, proc, port = servers[n]
                    target = {"url": f"http://127.0.0.1:{port}/xrpc/_health", "headers": {}, "params": [{}]}
                    cpu0 = cpu_seconds(proc.pid)
                    result = wrk_client.drive_wrk(target, args.concurrency, args.seconds)
                    served = max(sum(v for k, v in result["statuses"].items() if k == 200), 1)
                    results[mode].append((result["qps"], 1e6 * (cpu_seconds(proc.pid) - cpu0) / served))
        finally:
            for _mode, proc, _port in servers:
                proc.terminate()
                proc.wait(timeout=30)
    _print(args, loads, results)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
