"""One key flooding MCP `recall` against another key's recall latency, on default limits
(docs/mcp.md#limits-for-agents, docs/benchmarks.md#mcp-recall-under-a-flooding-key-scriptsbench_mcp_fairnesspy).

`engram serve` (default serving processes, the built-in model) over a data dir with two spaces of
`--memories` generated vectors each and one API key per space. The quiet key makes `--count` recalls one
after another (c=1, at most `--quiet-rate` a second), first alone, then while the flooding key runs `--sessions` sessions of `--parallel`
recall loops each as fast as they are answered. Printed: the quiet key's p50/p99 both times and their
ratio (the issue's bar: loaded p50 <= 2 x idle p50), and what the flood got (answers, RateLimitExceeded,
EmbedderBusy). `--no-key-budget` runs the flood without the per-key text budget, so only the embedder's
fair queue stands between the keys. `--after-burst` starts measuring a flood only once its key's burst
is spent (a sustained flood, without its first seconds of answers).

    .venv/bin/python scripts/bench_mcp_fairness.py [--memories 5000] [--count 100] [--sessions 8] [--parallel 4]
        [--after-burst]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import httpx2
from bench_text_search import QUERIES
from benchlib import engram_serve_process, latent, load_average, pct, seed
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from engram.config import read_env
from engram.lifecycle import open_context
from engram.service import apikeys
from engram.store import ModelSpec


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its children (the serving processes of `engram serve`)."""
    tick = os.sysconf("SC_CLK_TCK")
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / tick + sum(cpu_seconds(int(c)) for c in children)


@asynccontextmanager
async def mcp_client(url: str, token: str):
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def quiet_series(client, count: int, rate: float) -> list[float]:
    """`count` recalls one after another, at most `rate` a second (an agent's pace, within its budget)."""
    times = []
    for i in range(count):
        start = time.perf_counter()
        result = await client.call_tool("recall", {"query": QUERIES[i % len(QUERIES)], "mode": "vector"})
        elapsed = time.perf_counter() - start
        times.append(elapsed * 1000)
        assert not result.is_error, result.content
        await asyncio.sleep(max(0.0, 1 / rate - elapsed))
    return times


async def run_flood(url: str, token: str, sessions: int, parallel: int, after_burst: bool) -> None:
    """The flooding key: `sessions` sessions of `parallel` recall loops, until SIGINT; prints the outcomes.
    `after_burst`: says it is flooding only once its burst is spent (refusals in every loop's number)."""
    outcomes: Counter = Counter()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stop.set)

    async def session() -> None:
        async with mcp_client(url, token) as client:

            async def loop(k: int) -> None:
                i = k
                while not stop.is_set():
                    result = await client.call_tool(
                        "recall", {"query": QUERIES[i % len(QUERIES)], "mode": "vector"}
                    )
                    outcomes[result.content[0].text.split(":", 1)[0] if result.is_error else "answered"] += 1
                    i += 1

            await asyncio.gather(*(loop(k) for k in range(parallel)))

    tasks = [asyncio.create_task(session()) for _ in range(sessions)]

    def started() -> bool:  # every loop is running (and past the key's burst, if asked)
        spent = outcomes["RateLimitExceeded"] >= sessions * parallel or not after_burst
        return sum(outcomes.values()) >= sessions * parallel and spent

    while not started() and not stop.is_set():
        await asyncio.sleep(0.05)
    print("flooding", flush=True)
    await asyncio.gather(*tasks)
    print(json.dumps(dict(outcomes)), flush=True)


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=5000)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--quiet-rate", type=float, default=4.0)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--no-key-budget", action="store_true")
    parser.add_argument(
        "--after-burst",
        action="store_true",
        help="measure the flood once its key's burst is spent (a sustained flood, without its first seconds)",
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="ENGRAM_X=V", help="a setting to change"
    )
    parser.add_argument("--flood", nargs=2, metavar=("URL", "TOKEN"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.flood:
        await run_flood(*args.flood, args.sessions, args.parallel, args.after_burst)
        return

    with tempfile.TemporaryDirectory(prefix="engram-fairness-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")} | {
            "ENGRAM_DATA_DIR": str(Path(tmp)),
            "ENGRAM_EMBEDDER": "builtin",
            "ENGRAM_LOG_LEVEL": "warning",
        }
        if args.no_key_budget:
            env["ENGRAM_KEY_TEXT_SEARCH_RATE"] = "0"
        env.update(item.split("=", 1) for item in args.set)
        async with open_context(read_env(env)) as ctx:
            spec = ModelSpec(ctx.embedder.name, ctx.embedder.digest, ctx.embedder.dims)
            tokens = []
            for n, name in enumerate(("quiet", "flood")):
                space = await ctx.services.spaces.create_hosted(name)
                await seed(ctx, space.uri, latent(args.memories, spec.dims, seed=n + 1), spec)
                tokens.append((await apikeys.create_api_key(ctx.store, space.uri, ["read"], name))[1])
        quiet_token, flood_token = tokens

        async with engram_serve_process(env, settle_s=2) as (base, server_pid), AsyncExitStack() as stack:
            url = base + "/mcp"
            quiet = await stack.enter_async_context(mcp_client(url, quiet_token))
            await quiet_series(
                quiet, 10, args.quiet_rate
            )  # warm: the index loaded in both processes, the model hot
            load_before = load_average()
            idle = await quiet_series(quiet, args.count, args.quiet_rate)

            # The flood runs in a process of its own, as another tenant's agents would: its clients'
            # work must not queue on this process's event loop in front of the quiet key's calls.
            flood = await asyncio.create_subprocess_exec(
                sys.executable,
                __file__,
                "--flood",
                url,
                flood_token,
                "--sessions",
                str(args.sessions),
                "--parallel",
                str(args.parallel),
                *(["--after-burst"] if args.after_burst else []),
                stdout=asyncio.subprocess.PIPE,
            )
            assert (await flood.stdout.readline()).strip() == b"flooding"
            cpu_before, wall_before = (cpu_seconds(server_pid), cpu_seconds(flood.pid)), time.perf_counter()
            loaded = await quiet_series(quiet, args.count, args.quiet_rate)
            wall = time.perf_counter() - wall_before
            server_cpu = (cpu_seconds(server_pid) - cpu_before[0]) / wall
            flood_cpu = (cpu_seconds(flood.pid) - cpu_before[1]) / wall
            flood.send_signal(signal.SIGINT)  # it prints what it got and stops
            outcomes = json.loads((await flood.communicate())[0].decode().strip().splitlines()[-1])

    result = {
        "memories": args.memories,
        "flood": f"{args.sessions} sessions x {args.parallel} in flight",
        "key_budget": not args.no_key_budget,
        "after_burst": args.after_burst,
        "settings": args.set,
        "idle_p50_ms": round(statistics.median(idle), 2),
        "idle_p99_ms": round(pct(idle, 99), 2),
        "loaded_p50_ms": round(statistics.median(loaded), 2),
        "loaded_p99_ms": round(pct(loaded, 99), 2),
        "ratio_p50": round(statistics.median(loaded) / statistics.median(idle), 2),
        "flood_outcomes": outcomes,
        "cores_busy_under_flood": {"server": round(server_cpu, 2), "flood_client": round(flood_cpu, 2)},
        "load_avg": f"{load_before} -> {load_average()}",
    }
    print(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main())
