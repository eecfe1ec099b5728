"""Acknowledged writes per second through a real door, two source trees side by side in one run
(docs/benchmarks.md#writes).

Each tree (`--tree name=path`, e.g. the main branch checked out with `git archive` and this one) gets its
own data directory (or its own PostgreSQL database with `--postgres`) with 32 hosted spaces and one Sim
API key per space, set up by that tree's own code, and is served by `python -m engram serve` from that tree
(one process, the hashing embedder: no model cost). The load is Sim's `POST /api/memory` (one message per
request, appended to a conversation of up to 20 messages), `c` clients in flight, writing to one space or
spread over 32, made by wrk (`--client`, the default where it is installed: Debian's `wrk`) or by aiohttp
clients in this process, which take several times the CPU per request from the same cores. Every
configuration runs for `--seconds` on each tree in turn, twice (A B B A), and the
medians are reported, so co-tenant noise on the shared machine hits both trees alike.

Per configuration and tree: acknowledged writes/s (201/200 answers), p50 and p99 latency, and the serving
process's CPU time per write (utime + stime from /proc, so the client's own CPU is not counted).

On PostgreSQL, `--nodes 2` serves each tree from two cluster nodes on its one database (a shared signing
key and snapshot store, as tests/support/cluster.py starts them), and `--node-counts 1 2` measures each
configuration with the clients sending to the first node only and then spread over both (client `w` to
node `w % n`). `--count` runs the servers under scripts/pg_round_trips.py and PostgreSQL with
pg_stat_statements, and adds per configuration and tree: round trips per acknowledged write (by thread:
the writers, the readers), statements per write (the commonest ones too) and transactions per write.

    .venv/bin/python scripts/bench_writes.py --tree before=/tmp/engram-main --tree after=.
    .venv/bin/python scripts/bench_writes.py --tree before=/tmp/engram-main --tree after=. --postgres
    .venv/bin/python scripts/bench_writes.py --tree pinned=. --tree unpinned=. --processes 2 \
        --tree-env unpinned:ENGRAM_PIN_PROCESSES=0
    .venv/bin/python scripts/bench_writes.py --tree before=... --tree after=. --postgres --nodes 2 \
        --node-counts 1 2 --spaces 32 --concurrency 32
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
import wrk_client
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
    """One tree's servers: one, or `--nodes` cluster nodes on one database."""

    name: str
    tree: Path
    processes: list[subprocess.Popen]
    urls: list[str]
    tokens: list[str]
    database_url: str | None = None
    round_trip_files: list[Path] | None = None

    @property
    def process(self) -> subprocess.Popen:
        return self.processes[0]

    def pids(self) -> list[int]:
        """The serving processes and, with `--processes` above 1, the children they serve from."""
        pids = [p.pid for p in self.processes]
        for pid in pids:
            for task in Path(f"/proc/{pid}/task").iterdir():
                pids += [int(c) for c in (task / "children").read_text().split()]
        return pids

    def round_trips(self) -> dict[str, int]:
        """psycopg's waits for the server so far, by thread (scripts/pg_round_trips.py), summed over nodes."""
        total: dict[str, int] = {}
        for path in self.round_trip_files or []:
            try:
                counts = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            for thread, n in counts.items():
                total[thread] = total.get(thread, 0) + n
        return total

    def cpu_s(self) -> tuple[float, float]:
        """(user, system) CPU seconds of the serving processes so far."""
        return _cpu_s(self.pids())

    postgres_pid: int | None = None

    def postgres_cpu_s(self) -> float:
        """CPU seconds of the PostgreSQL server (its postmaster and every backend) so far: shared by the
        trees, so only what a tree's own run adds is its."""
        if self.postgres_pid is None:
            return 0.0
        pids = [self.postgres_pid]
        for pid in pids:
            try:
                for task in Path(f"/proc/{pid}/task").iterdir():
                    pids += [int(c) for c in (task / "children").read_text().split()]
            except FileNotFoundError:  # a backend that ended meanwhile
                continue
        return sum(_cpu_s(pids, missing_ok=True))


def _cpu_s(pids: list[int], *, missing_ok: bool = False) -> tuple[float, float]:
    tick = os.sysconf("SC_CLK_TCK")
    user = system = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            if missing_ok:  # a backend that ended meanwhile
                continue
            raise
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


def _signing_key() -> str:
    """One service key for all of a tree's nodes (each signs the hosted spaces' commits)."""
    done = subprocess.run(
        [sys.executable, "-c", ("from engram.auth.crypto_keys import PrivateKey;"
         " print(PrivateKey.generate('ES256').to_multibase())")],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, check=True, text=True,
    )  # fmt: skip
    return done.stdout.strip()


def start_node(
    name: str,
    tree: Path,
    root: Path,
    database_url: str | None,
    processes: int,
    nodes: int,
    count: bool,
    extra: dict[str, str] | None = None,
) -> Node:
    data_dir = root / name
    data_dir.mkdir()
    env = _env(tree, data_dir, database_url, processes) | (extra or {})
    if nodes > 1:
        (root / f"{name}-snapshots").mkdir()
        env.update(
            ENGRAM_SIGNING_KEY=_signing_key(),
            ENGRAM_INDEX_STORE=(root / f"{name}-snapshots").as_uri(),
            ENGRAM_HEARTBEAT_MS="500",
            ENGRAM_LEASE_TIMEOUT_MS="3000",
        )
    setup = subprocess.run(
        [sys.executable, "-c", SETUP, str(SPACES)], env=env, cwd=tree, capture_output=True, check=True
    )
    tokens = json.loads(setup.stdout.decode().strip().splitlines()[-1])
    started: list[subprocess.Popen] = []
    urls: list[str] = []
    round_trip_files: list[Path] = []
    for n in range(nodes):
        node_env = dict(env)
        if n:
            node_env["ENGRAM_DATA_DIR"] = str(root / f"{name}-{n}")
        if count:
            round_trip_files.append(root / f"{name}-{n}.round-trips.json")
            node_env["BENCH_ROUND_TRIPS_FILE"] = str(round_trip_files[-1])
        command = (
            [sys.executable, str(ROOT / "scripts" / "pg_round_trips.py")]
            if count
            else [sys.executable, "-m", "engram"]
        )

        def env_for(port: int, node_env: dict[str, str] = node_env) -> dict[str, str]:
            cluster = {"ENGRAM_NODE_URL": f"http://127.0.0.1:{port}"} if nodes > 1 else {}
            return {**node_env, **cluster, "ENGRAM_PORT": str(port), "ENGRAM_HOST": "127.0.0.1"}

        process, port = start_engram([*command, "serve"], env_for, root / f"{name}-{n}.log", cwd=tree)
        started.append(process)
        urls.append(f"http://127.0.0.1:{port}")
    return Node(name, tree, started, urls, tokens, database_url, round_trip_files or None)


# The same load as `load`'s clients, made by wrk's Lua (C, a tenth of an aiohttp client's CPU per request).
# One wrk per node runs that node's clients w = first, first + step, ... (`mine` of them, one connection
# each): its request i is client first + step * (i % mine)'s n-th message, n = i // mine, so each client's
# conversation and space rotate as they do there.
_WRK_WRITES = """
local tokens = %(tokens)s
local c, spaces, conversation, tag = %(c)d, %(spaces)d, %(conversation)d, %(tag)s
local first, step, mine = %(first)d, %(step)d, %(mine)d
local i = -1
request = function()
  i = i + 1
  local w, n = first + step * (i %% mine), math.floor(i / mine)
  local body = string.format('{"workflowId": "bench", "key": "%%s-%%d-%%d", "type": "agent", "data": ' ..
    '{"role": "user", "content": "message %%d of client %%d: remember the number %%d"}}',
    tag, w, math.floor(n / conversation), n, w, n * 7)
  local headers = {["Authorization"] = "Bearer " .. tokens[((w + n * c) %% spaces) + 1],
    ["Content-Type"] = "application/json"}
  return wrk.format("POST", "/api/memory", headers, body)
end
"""


async def _drive_wrk(node: Node, concurrency: int, spaces: int, seconds: float, tag: str, nodes: int) -> dict:
    """`load`'s clients as one wrk per node, all at once (client `w` to node `w % nodes`); their requests and
    answers summed, the longest run's duration, the median of their p50s and the highest p99 (wrk reports
    percentiles per run, which do not merge exactly)."""
    runs = []
    for first in range(nodes):
        mine = len(range(first, concurrency, nodes))
        lua = _WRK_WRITES % {
            "tokens": wrk_client.lua_table(node.tokens[:spaces]),
            "c": concurrency,
            "spaces": spaces,
            "conversation": CONVERSATION,
            "tag": json.dumps(tag),
            "first": first,
            "step": nodes,
            "mine": mine,
        }
        runs.append(asyncio.to_thread(wrk_client.run_wrk, lua, node.urls[first], mine, seconds))
    done = await asyncio.gather(*runs)
    return {
        "ok": sum(r["ok"] for r in done),
        "requests": sum(r["requests"] for r in done),
        "duration_s": max(r["duration_s"] for r in done),
        "p50_ms": statistics.median(r["p50_ms"] for r in done),
        "p99_ms": max(r["p99_ms"] for r in done),
    }


async def load(
    node: Node,
    session,
    concurrency: int,
    spaces: int,
    seconds: float,
    tag: str,
    nodes: int = 1,
    wrk: bool = False,
) -> dict:
    """`concurrency` clients posting back to back for `seconds` (client `w` to node `w % nodes`), by
    aiohttp clients in this process or (`wrk`, one node) by wrk; what the servers acknowledged."""
    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + seconds
    driven: dict = {}

    async def client(w: int) -> None:
        nonlocal errors
        n = 0
        url = node.urls[w % nodes] + "/api/memory"
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
            async with session.post(url, json=body, headers={"Authorization": f"Bearer {token}"}) as r:
                await r.read()
                ok = r.status in (200, 201)
            if ok:
                latencies.append(time.perf_counter() - t0)
            else:
                errors += 1
            n += 1

    counting = node.round_trip_files is not None
    if counting:
        await asyncio.sleep(0.3)  # the counters' files are rewritten every 100 ms
        trips0, stats0 = node.round_trips(), await asyncio.to_thread(_statements, node.database_url)
    (user0, sys0), pg0, t0 = node.cpu_s(), node.postgres_cpu_s(), time.perf_counter()
    if wrk:
        driven = await _drive_wrk(node, concurrency, spaces, seconds, tag, nodes)
    else:
        await asyncio.gather(*(client(w) for w in range(concurrency)))
    (user1, sys1), pg1, elapsed = node.cpu_s(), node.postgres_cpu_s(), time.perf_counter() - t0
    cpu, system = user1 - user0 + sys1 - sys0, sys1 - sys0
    latencies.sort()
    count = len(latencies)
    if driven:  # wrk's own count, clock and percentiles
        count, elapsed, errors = driven["ok"], driven["duration_s"], driven["requests"] - driven["ok"]
    counts: dict = {}
    if counting and count:
        await asyncio.sleep(0.3)
        trips1, stats1 = node.round_trips(), await asyncio.to_thread(_statements, node.database_url)
        counts = _per_write(trips0, trips1, stats0, stats1, count)
    p50 = driven["p50_ms"] if driven else latencies[count // 2] * 1000 if count else None
    p99 = (
        driven["p99_ms"] if driven else latencies[min(count - 1, int(count * 0.99))] * 1000 if count else None
    )
    return counts | {
        "writes_per_s": count / elapsed,
        "p50_ms": p50 if count else None,
        "p99_ms": p99 if count else None,
        "cpu_ms_per_write": cpu * 1000 / count if count else None,
        # the PostgreSQL server's (every backend's): what the database spent on a write
        "postgres_cpu_ms_per_write": (pg1 - pg0) * 1000 / count if count and node.postgres_pid else None,
        "system_ms_per_write": system * 1000 / count if count else None,  # the kernel's share of it
        "errors": errors,
    }


def _statements(database_url: str | None) -> dict:
    """pg_stat_statements' calls per statement of this database so far."""
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT query, sum(calls)::bigint, sum(total_exec_time + total_plan_time) FROM pg_stat_statements"
            " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) GROUP BY query"
        ).fetchall()
    return {"calls": {q: n for q, n, _ in rows}, "ms": {q: ms for q, _, ms in rows}}


_OWN = ("pg_stat_statements",)  # the bench's own reads of the counters


def _per_write(trips0: dict, trips1: dict, stats0: dict, stats1: dict, writes: int) -> dict:
    trips = {k: trips1.get(k, 0) - trips0.get(k, 0) for k in trips1}
    serving = {k: v for k, v in trips.items() if v and "changes" not in k}  # not the LISTEN loop's waits
    calls = {
        q: n - stats0["calls"].get(q, 0)
        for q, n in stats1["calls"].items()
        if n - stats0["calls"].get(q, 0) and not any(own in q for own in _OWN)
    }
    top = sorted(calls.items(), key=lambda item: -item[1])[:40]
    ms = {q: v - stats0["ms"].get(q, 0) for q, v in stats1["ms"].items() if q in calls}
    return {
        "round_trips_per_write": round(sum(serving.values()) / writes, 2),
        "round_trips_by_thread": {k: round(v / writes, 2) for k, v in sorted(serving.items())},
        "statements_per_write": round(sum(calls.values()) / writes, 2),
        # the writers' transactions (the readers' end in ROLLBACK): 1 / the mean group size
        "commits_per_write": round(calls.get("COMMIT", 0) / writes, 3),
        # per write: how many, and the server's time in them (planning and execution), in ms
        "top_statements": [
            [round(n / writes, 2), round(ms[q] / writes, 4), " ".join(q.split())[:100]] for q, n in top
        ],
        "statement_ms_per_write": round(sum(ms.values()) / writes, 3),
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
            await load(node, session, 4, SPACES, 1.0, "warm", len(node.urls))
        run = 0
        for spaces, concurrency, node_count in [
            (s, c, n) for s in args.spaces for c in args.concurrency for n in args.node_counts
        ]:
            load_avg = Path("/proc/loadavg").read_text().split()[0]
            per_node: dict[str, list[dict]] = {n.name: [] for n in nodes}
            for order in (nodes, nodes[::-1]):  # A B, then B A
                for node in order:
                    run += 1
                    result = await load(
                        node, session, concurrency, spaces, args.seconds, f"r{run}", node_count,
                        wrk=args.client == "wrk",
                    )  # fmt: skip
                    per_node[node.name].append(result)
            row = {"spaces": spaces, "c": concurrency, "nodes": node_count, "load_average": load_avg}
            row["client"] = args.client
            for name, runs in per_node.items():
                row[name] = {
                    k: _median(runs, k)
                    for k in (
                        "writes_per_s",
                        "p50_ms",
                        "p99_ms",
                        "cpu_ms_per_write",
                        "system_ms_per_write",
                        "postgres_cpu_ms_per_write",
                    )
                }
                row[name]["errors"] = sum(r["errors"] for r in runs)
                if "round_trips_per_write" in runs[-1]:  # counts barely move between runs: the last
                    for key in ("round_trips_per_write", "round_trips_by_thread", "statements_per_write",
                                    "commits_per_write", "top_statements"):  # fmt: skip
                        row[name][key] = runs[-1][key]
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
            await load(
                nodes[-1], session, args.concurrency[-1], args.spaces[-1], args.seconds, "spy",
                wrk=args.client == "wrk",
            )  # fmt: skip
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
    parser.add_argument("--nodes", type=int, default=1, help="cluster nodes per tree (PostgreSQL only)")
    parser.add_argument(
        "--node-counts",
        type=int,
        nargs="+",
        help="nodes the clients send to, per configuration (default: --nodes)",
    )
    parser.add_argument(
        "--count", action="store_true", help="round trips, statements and transactions per write (PostgreSQL)"
    )
    parser.add_argument(
        "--client",
        choices=["auto", "wrk", "aiohttp"],
        default="auto",
        help="load generator: wrk (C, ~10x less CPU per request; one per node written to) when installed, "
        "else aiohttp clients in this process",
    )
    parser.add_argument(
        "--tree-env",
        action="append",
        default=[],
        metavar="NAME:ENGRAM_X=value",
        help="a setting for one --tree's servers (e.g. two names for one path, one with "
        "ENGRAM_PIN_PROCESSES=0)",
    )
    args = parser.parse_args()
    tree_env: dict[str, dict[str, str]] = {}
    for item in args.tree_env:
        name, _, setting = item.partition(":")
        key, _, value = setting.partition("=")
        tree_env.setdefault(name, {})[key] = value
    if args.client == "auto":
        args.client = "wrk" if wrk_client.available() else "aiohttp"
    args.node_counts = args.node_counts or [args.nodes]
    if (args.nodes > 1 or args.count) and not args.postgres:
        parser.error("--nodes and --count need --postgres")
    if max(args.node_counts) > args.nodes:
        parser.error("--node-counts above --nodes")
    trees = [(t.split("=", 1)[0], Path(t.split("=", 1)[1]).resolve()) for t in args.tree]
    server = None
    if args.postgres:
        bin_dir = find_binaries()
        if bin_dir is None:
            raise SystemExit("PostgreSQL binaries (initdb, pg_ctl) not found")
        options = "-c shared_preload_libraries=pg_stat_statements" if args.count else ""
        server = PostgresServer(bin_dir, options=options).start()
    nodes: list[Node] = []
    try:
        with tempfile.TemporaryDirectory(prefix="engram-bench-writes-") as tmp:
            for name, tree in trees:
                url = server.create_database() if server else None
                if args.count:
                    import psycopg

                    with psycopg.connect(url, autocommit=True) as conn:
                        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                extra = tree_env.get(name, {})
                nodes.append(
                    start_node(name, tree, Path(tmp), url, args.processes, args.nodes, args.count, extra)
                )
                if server is not None:
                    nodes[-1].postgres_pid = int((server.data / "postmaster.pid").read_text().split()[0])
            try:
                result = await measure(nodes, args)
            finally:
                for node in nodes:
                    for process in node.processes:
                        process.terminate()
                    for process in node.processes:
                        process.wait(30)
        result["store"] = "postgres" if args.postgres else "sqlite"
        result["trees"] = {name: str(tree) for name, tree in trees}
        print(json.dumps(result, indent=2))
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    asyncio.run(main())
