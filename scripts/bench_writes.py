"""Acknowledged writes per second through a real door, two source trees side by side in one run
(docs/benchmarks.md#writes).

Each tree (`--tree name=path`, e.g. the main branch checked out with `git archive` and this one) gets its
own data directory (or its own PostgreSQL database with `--postgres`) with 32 hosted spaces and one Sim
API key per space, set up by that tree's own code, and is served by `python -m engram serve` from that tree
(one process, the hashing embedder: no model cost). The load is Sim's `POST /api/memory` (one message per
request, appended to a conversation of up to 20 messages), `c` clients in flight, writing to one space or
spread over 32. Every configuration runs for `--seconds` on each tree in turn, twice (A B B A), and the
medians are reported, so co-tenant noise on the shared machine hits both trees alike.

Per configuration and tree: acknowledged writes/s (201/200 answers), p50 and p99 latency, and the serving
process's CPU time per write (utime + stime from /proc, so the client's own CPU is not counted).

    .venv/bin/python scripts/bench_writes.py --tree before=/tmp/engram-main --tree after=.
    .venv/bin/python scripts/bench_writes.py --tree before=/tmp/engram-main --tree after=. --postgres
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

import aiohttp
from support.engram_process import start_engram
from support.postgres_server import PostgresServer, find_binaries

SPACES = 32
CONVERSATION = 20  # messages per conversation before a client starts the next one

# Run with the tree's own engram: creates the spaces and keys, prints the keys' tokens as JSON.
SETUP = """
import asyncio, json, sys
from engram.config import read_env
from engram.lifecycle import open_context
from engram.service import apikeys

async def main():
    tokens = []
    async with open_context(read_env()) as ctx:
        for i in range(int(sys.argv[1])):
            space = await ctx.services.spaces.create_hosted(f"bench-{i}")
            _, token = await apikeys.create_api_key(ctx.store, space.uri, ["read", "write"], "bench")
            tokens.append(token)
    print(json.dumps(tokens))

asyncio.run(main())
"""


@dataclass
class Node:
    name: str
    tree: Path
    process: subprocess.Popen
    url: str
    tokens: list[str]

    def pids(self) -> list[int]:
        """The serving process and, with `--processes` above 1, the children it serves from."""
        pids = [self.process.pid]
        for pid in pids:
            for task in Path(f"/proc/{pid}/task").iterdir():
                pids += [int(c) for c in (task / "children").read_text().split()]
        return pids

    def cpu_s(self) -> tuple[float, float]:
        """(user, system) CPU seconds of the serving processes so far."""
        tick = os.sysconf("SC_CLK_TCK")
        user = system = 0.0
        for pid in self.pids():
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            user, system = user + int(fields[11]) / tick, system + int(fields[12]) / tick
        return user, system


def _env(tree: Path, data_dir: Path, database_url: str | None, processes: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env.update(
        PYTHONPATH=str(tree),
        OMP_NUM_THREADS="1",
        ENGRAM_DATA_DIR=str(data_dir),
        ENGRAM_EMBEDDER="hashing",
        ENGRAM_PROCESSES=str(processes),
        ENGRAM_SERVICE_DID="did:web:bench.test",
        ENGRAM_PUBLIC_URL="https://bench.test",
        ENGRAM_LOG_LEVEL="warning",
    )
    if database_url:
        env["ENGRAM_DATABASE_URL"] = database_url
    return env


def start_node(name: str, tree: Path, root: Path, database_url: str | None, processes: int) -> Node:
    data_dir = root / name
    data_dir.mkdir()
    env = _env(tree, data_dir, database_url, processes)
    setup = subprocess.run(
        [sys.executable, "-c", SETUP, str(SPACES)], env=env, cwd=tree, capture_output=True, check=True
    )
    tokens = json.loads(setup.stdout.decode().strip().splitlines()[-1])
    process, port = start_engram(
        [sys.executable, "-m", "engram", "serve"],
        lambda port: {**env, "ENGRAM_PORT": str(port), "ENGRAM_HOST": "127.0.0.1"},
        root / f"{name}.log",
        cwd=tree,
    )
    return Node(name, tree, process, f"http://127.0.0.1:{port}", tokens)


async def load(node: Node, session, concurrency: int, spaces: int, seconds: float, tag: str) -> dict:
    """`concurrency` clients posting back to back for `seconds`; what the server acknowledged."""
    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + seconds

    async def client(w: int) -> None:
        nonlocal errors
        n = 0
        while time.perf_counter() < stop:
            token = node.tokens[(w + n * concurrency) % spaces]
            body = {
                "workflowId": "bench",
                "key": f"{tag}-{w}-{n // CONVERSATION}",
                "type": "agent",
                "data": {
                    "role": "user",
                    "content": f"message {n} of client {w}: remember the number {n * 7}",
                },
            }
            t0 = time.perf_counter()
            async with session.post(
                node.url + "/api/memory", json=body, headers={"Authorization": f"Bearer {token}"}
            ) as r:
                await r.read()
                ok = r.status in (200, 201)
            if ok:
                latencies.append(time.perf_counter() - t0)
            else:
                errors += 1
            n += 1

    (user0, sys0), t0 = node.cpu_s(), time.perf_counter()
    await asyncio.gather(*(client(w) for w in range(concurrency)))
    (user1, sys1), elapsed = node.cpu_s(), time.perf_counter() - t0
    cpu, system = user1 - user0 + sys1 - sys0, sys1 - sys0
    latencies.sort()
    count = len(latencies)
    return {
        "writes_per_s": count / elapsed,
        "p50_ms": latencies[count // 2] * 1000 if count else None,
        "p99_ms": latencies[min(count - 1, int(count * 0.99))] * 1000 if count else None,
        "cpu_ms_per_write": cpu * 1000 / count if count else None,
        "system_ms_per_write": system * 1000 / count if count else None,  # the kernel's share of it
        "errors": errors,
    }


def _py_spy() -> str:
    """py-spy beside the interpreter (installed in the venv), else the one on PATH."""
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy") or str(beside)


def _median(runs: list[dict], key: str):
    values = [r[key] for r in runs if r[key] is not None]
    return round(statistics.median(values), 3) if values else None


async def measure(nodes: list[Node], args) -> dict:
    out: dict = {"load_average_before": Path("/proc/loadavg").read_text().split()[:3], "results": []}
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        for node in nodes:  # warm-up: first requests load lexicons, caches, the hashing embedder
            await load(node, session, 4, SPACES, 1.0, "warm")
        run = 0
        for spaces in args.spaces:
            for concurrency in args.concurrency:
                load_avg = Path("/proc/loadavg").read_text().split()[0]
                per_node: dict[str, list[dict]] = {n.name: [] for n in nodes}
                for order in (nodes, nodes[::-1]):  # A B, then B A
                    for node in order:
                        run += 1
                        result = await load(node, session, concurrency, spaces, args.seconds, f"r{run}")
                        per_node[node.name].append(result)
                row = {"spaces": spaces, "c": concurrency, "load_average": load_avg}
                for name, runs in per_node.items():
                    row[name] = {
                        k: _median(runs, k)
                        for k in (
                            "writes_per_s",
                            "p50_ms",
                            "p99_ms",
                            "cpu_ms_per_write",
                            "system_ms_per_write",
                        )
                    }
                    row[name]["errors"] = sum(r["errors"] for r in runs)
                first, last = nodes[0].name, nodes[-1].name
                if row[first]["writes_per_s"] and row[last]["writes_per_s"]:
                    row["ratio"] = round(row[last]["writes_per_s"] / row[first]["writes_per_s"], 2)
                print(json.dumps(row), flush=True)
                out["results"].append(row)
        if (
            args.py_spy
        ):  # where the last tree's server spends its CPU, at the last concurrency and space count
            spy = await asyncio.create_subprocess_exec(
                _py_spy(), "record", "-p", str(nodes[-1].process.pid), "-d", str(int(args.seconds)),
                "-r", "250", "-t", "--gil", "--format", "raw", "-o", args.py_spy,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            await load(nodes[-1], session, args.concurrency[-1], args.spaces[-1], args.seconds, "spy")
            await spy.wait()
    out["load_average_after"] = Path("/proc/loadavg").read_text().split()[:3]
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", required=True, help="name=path of a source tree")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--spaces", type=int, nargs="+", default=[1, 32], choices=range(1, SPACES + 1))
    parser.add_argument("--postgres", action="store_true", help="one PostgreSQL database per tree")
    parser.add_argument(
        "--processes", type=int, default=1, help="ENGRAM_PROCESSES of each server (the default serve: cores)"
    )
    parser.add_argument("--py-spy", metavar="FILE", help="also profile the last tree (collapsed stacks)")
    args = parser.parse_args()
    trees = [(t.split("=", 1)[0], Path(t.split("=", 1)[1]).resolve()) for t in args.tree]
    server = None
    if args.postgres:
        bin_dir = find_binaries()
        if bin_dir is None:
            raise SystemExit("PostgreSQL binaries (initdb, pg_ctl) not found")
        server = PostgresServer(bin_dir).start()
    nodes: list[Node] = []
    try:
        with tempfile.TemporaryDirectory(prefix="engram-bench-writes-") as tmp:
            for name, tree in trees:
                url = server.create_database() if server else None
                nodes.append(start_node(name, tree, Path(tmp), url, args.processes))
            try:
                result = await measure(nodes, args)
            finally:
                for node in nodes:
                    node.process.terminate()
                    node.process.wait(30)
        result["store"] = "postgres" if args.postgres else "sqlite"
        result["trees"] = {name: str(tree) for name, tree in trees}
        print(json.dumps(result, indent=2))
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    asyncio.run(main())
