"""Signed-search throughput, side by side (docs/benchmarks.md#throughput).

Each engram under test runs in its own process (`serve` mode: a real server on 127.0.0.1 with a seeded
space, rate limits off); this process is the client. Rounds alternate between the servers so co-tenant noise
on a shared machine hits all of them alike; the table gives each server's median QPS and p50/p99 over rounds.

    .venv/bin/python scripts/bench_throughput.py --size 10000 --concurrency 32 --seconds 5 --rounds 3
    # compare against another checkout of engram (e.g. `git archive main | tar -x -C /tmp/base`, then copy
    # this script into /tmp/base/scripts/):
    .venv/bin/python scripts/bench_throughput.py --tree /tmp/base --tree .
    # `engram serve` with ENGRAM_PROCESSES=1 and =2 side by side over one seeded data directory:
    .venv/bin/python scripts/bench_throughput.py --processes 1 2
    # the same, also on each event loop, and against another checkout (its `engram serve`, on its default loop):
    .venv/bin/python scripts/bench_throughput.py --processes 1 2 --event-loop uvloop asyncio --tree /tmp/base
    # a single client against the default `engram serve`, with its HTTP floor and bare FAISS's one-thread p50:
    .venv/bin/python scripts/bench_throughput.py --processes 2 --concurrency 1 --floor --bare
    # two serving processes pinned to a core each (the default) and unpinned, with the bare FAISS series:
    .venv/bin/python scripts/bench_throughput.py --processes 2 --pin 1 0 --bare
    # a checkout on PostgreSQL against this one on PostgreSQL and on SQLite (one database each):
    .venv/bin/python scripts/bench_throughput.py --tree /tmp/base --tree . --tree . \
        --tree-settings '{"database_url": "postgresql://.../a"}' \
        --tree-settings '{"database_url": "postgresql://.../b"}' --tree-settings '{}'
    # a cProfile of the server side, written to DIR/<n>.prof:
    .venv/bin/python scripts/bench_throughput.py --profile DIR
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


async def serve(size: int, ready: Path, profile: str | None, settings_json: str) -> None:
    import numpy as np
    from benchlib import engram_server, latent, seed

    import engram
    from engram.search.vectors import encode_query_vector
    from engram.store import ModelSpec

    print(f"serving engram from {Path(engram.__file__).parent}", file=sys.stderr)
    spec = ModelSpec("bench-384", "sha256:bench", 384)
    async with engram_server(search_concurrency=1024, **json.loads(settings_json)) as srv:
        space = (await srv.ctx.services.spaces.create_hosted("bench", model=spec)).uri
        await seed(srv.ctx, space, latent(size, spec.dims, seed=1), spec)
        qs = latent(64, spec.dims, seed=2).astype(np.float16).astype(np.float32)
        params = [
            {"space": space, "vector": encode_query_vector(q / np.linalg.norm(q)), "model": spec.model}
            | {"modelDigest": spec.digest, "limit": "10"}
            for q in qs
        ]
        url = f"{srv.base}/xrpc/garden.engram.searchMemories"
        for _ in range(600):  # load the index before the clock starts (an HNSW build can take a minute)
            async with srv.session.get(url, params=params[0], headers=srv.signed(space)) as r:
                if r.status == 200:
                    break
                assert r.status == 503, await r.text()
            await asyncio.sleep(0.5)
        profiler = None
        if profile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        ready.write_text(json.dumps({"url": url, "headers": srv.signed(space), "params": params}))
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent closes it
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(profile)


def run_load(args: argparse.Namespace, target: dict, concurrency: int, seconds: float) -> dict:
    """One round of load from the chosen client; adds client_cpu_s (the client's own CPU) to the result."""
    sys.path.insert(0, str(HERE))
    import wrk_client

    if args.client == "wrk" or (args.client == "auto" and wrk_client.available()):
        return wrk_client.drive_wrk(target, concurrency, seconds)
    cpu0 = time.process_time()
    result = asyncio.run(drive(target, concurrency, seconds))
    return result | {"client_cpu_s": time.process_time() - cpu0}


async def drive(target: dict, concurrency: int, seconds: float) -> dict:
    import aiohttp

    latencies: list[float] = []
    statuses: dict[int, int] = {}
    stop = time.perf_counter() + seconds
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker(offset: int) -> None:
            i = offset
            while time.perf_counter() < stop:
                t0 = time.perf_counter()
                async with session.get(
                    target["url"],
                    params=target["params"][i % len(target["params"])],
                    headers=target["headers"],
                ) as r:
                    await r.read()
                latencies.append(time.perf_counter() - t0)
                statuses[r.status] = statuses.get(r.status, 0) + 1
                i += 1

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(n) for n in range(concurrency)))
        elapsed = time.perf_counter() - t0
    latencies.sort()
    return {
        "qps": len(latencies) / elapsed,
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[int(len(latencies) * 0.99)],
        "statuses": statuses,
    }


def bare_index(size: int):
    """The same vectors in a bare FAISS index of this process (`IndexScalarQuantizer`, fp16, inner product:
    what `SpaceIndex` scans), and the queries one per (1, d) array, for the bare-FAISS series."""
    sys.path.insert(0, str(HERE))
    import faiss
    import numpy as np
    from benchlib import latent

    vectors = latent(size, 384, seed=1).astype(np.float16).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = faiss.IndexScalarQuantizer(384, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    index.add(vectors)
    queries = latent(64, 384, seed=2).astype(np.float16).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    return index, [np.ascontiguousarray(q[None, :]) for q in queries]


def bare_rate(index, queries, seconds: float, threads: int = 2) -> tuple[float, float]:
    """(searches per second, CPU µs per search) of bare FAISS `index.search`, one query per call, from
    `threads` threads with one OpenMP thread each: the baseline the way a user measures FAISS
    (docs/benchmarks.md#throughput)."""
    from benchlib import threaded_rate

    return threaded_rate(lambda q: index.search(q, 10), queries, seconds, threads)


def bare_p50_ms(index, queries, count: int = 2000) -> float:
    """The median latency of bare FAISS `index.search`, one query per call on this one thread (OpenMP
    pinned to one thread): the bare baseline of a single client (docs/benchmarks.md#headline-ratios)."""
    import faiss

    faiss.omp_set_num_threads(1)
    times = []
    for i in range(count):
        q = queries[i % len(queries)]
        t0 = time.perf_counter()
        index.search(q, 10)
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def health_target(target: dict) -> dict:
    """The same server's `/xrpc/_health` as a load target: the HTTP floor of its requests."""
    return {
        "url": target["url"].replace("garden.engram.searchMemories", "_health"),
        "params": [{}],
        "headers": {},
    }


def _bare_line(bare: list[tuple[float, float]]) -> str:
    qps, cpu = statistics.median(q for q, _ in bare), statistics.median(c for _, c in bare)
    return (
        f"bare FAISS index.search, 2 threads: {qps:.0f} QPS (rounds {[round(q) for q, _ in bare]}), "
        f"CPU {cpu:.0f} µs per search (rounds {[round(c) for _, c in bare]})"
    )


def _round_order(count: int, round_no: int) -> list[int]:
    """The series' order in one round: forward, then backward (A B, B A, ...; the bare series first, then
    last). Always the same order gave the second series 15-20 % more CPU per request and fewer QPS at load
    9-10, whichever tree it was (2026-12-02)."""
    order = list(range(count))
    return order if round_no % 2 == 0 else order[::-1]


def _engram_source(env: dict[str, str], cwd: str) -> str:
    """The directory `engram` is imported from under this environment and working directory."""
    probe = [
        sys.executable,
        "-c",
        "import engram, os; print(os.path.dirname(os.path.dirname(engram.__file__)))",
    ]
    return subprocess.run(probe, env=env, cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def _summed_statuses(rounds: list[dict]) -> dict:
    """Response statuses over every round (a fast series of errors is not throughput)."""
    total: dict = {}
    for r in rounds:
        for status, count in r["statuses"].items():
            total[status] = total.get(status, 0) + count
    return total


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc): the server's cost per request does not
    depend on how busy the neighbours keep the machine, its QPS does."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_and_rss(pid: int) -> tuple[float, list[int]]:
    """CPU seconds of a process and its children, and the RSS (KiB) of each serving process (the children
    when there are any: the parent of ENGRAM_PROCESSES>1 only waits)."""
    children = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(c) for c in (task / "children").read_text().split()]
    serving = [c for c in children if "spawn_main" in Path(f"/proc/{c}/cmdline").read_text()] or [pid]
    rss = []
    for p in serving:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss.append(int(line.split()[1]))
    return sum(cpu_seconds(p) for p in {pid, *serving}), rss


def machine_cpu() -> float:
    """Busy CPU seconds of the whole machine so far, every core summed (/proc/stat): next to the server's
    and the client's own CPU it shows where the cores went during a round."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    busy = sum(fields[:8]) - fields[3] - fields[4]  # user nice system irq softirq steal; not idle, iowait
    return busy / os.sysconf("SC_CLK_TCK")


async def seed_data_dir(data_dir: Path, env: dict[str, str], size: int) -> dict:
    """A space of `size` latent vectors written through the service into `data_dir`, and signed request
    material for it (the servers then open the same directory)."""
    sys.path.insert(0, str(HERE))
    from benchlib import latent, seed

    from engram.auth.crypto_keys import PrivateKey
    from engram.auth.space_signature import sign_space_request
    from engram.config import read_env
    from engram.lifecycle import open_context
    from engram.search.vectors import encode_query_vector
    from engram.spacehost.minting import mint_for_space
    from engram.store import ModelSpec

    spec = ModelSpec("bench-384", "sha256:bench", 384)
    async with open_context(read_env(env), embedder=False) as ctx:
        space = await ctx.services.spaces.create_hosted("bench", model=spec)
        await seed(ctx, space.uri, latent(size, spec.dims, seed=1), spec)
        holder = PrivateKey.generate("ES256")
        token = mint_for_space(ctx.keyring, space.uri, holder.public_key.did_key, ttl=3600)
        headers = sign_space_request(holder, token, ctx.settings.service_did)
    qs = latent(64, spec.dims, seed=2)
    params = [
        {"space": space.uri, "vector": encode_query_vector(q), "model": spec.model}
        | {"modelDigest": spec.digest, "limit": "10"}
        for q in qs
    ]
    return {"headers": headers, "params": params}


def serve_env(tmp: str, drop: tuple[str, ...] = ("ENGRAM_",)) -> dict[str, str]:
    """The environment of an `engram serve` under benchmark: data in `tmp`, no embedder, rate limits off,
    quiet logs; this process's variables starting with any of `drop` are left out."""
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)} | {
        "ENGRAM_DATA_DIR": f"{tmp}/data",
        "ENGRAM_EMBEDDER": "none",
        "ENGRAM_SERVICE_DID": "did:web:bench.test",
        "ENGRAM_PUBLIC_URL": "https://bench.test",
        "ENGRAM_SEARCH_RATE": "0",
        "ENGRAM_SEARCH_CONCURRENCY": "1024",
        "ENGRAM_LOG_LEVEL": "warning",
    }


def bench_processes(args: argparse.Namespace) -> None:
    import urllib.request

    load_before = Path("/proc/loadavg").read_text().split()[0]
    with tempfile.TemporaryDirectory(prefix="engram-procs-") as tmp:
        env = serve_env(tmp) | dict(pair.split("=", 1) for pair in args.env or [])
        material = asyncio.run(seed_data_dir(Path(tmp) / "data", env, args.size))
        servers = []
        for n, (label, overrides) in enumerate(process_series(args)):
            port = 18600 + n
            proc_env = env | overrides | {"ENGRAM_PORT": str(port)}
            log = open(f"{tmp}/serve-{n}.log", "wb")  # noqa: SIM115 - closed with the directory
            # cwd=tmp: `python -m` puts the working directory first on sys.path, ahead of PYTHONPATH, so
            # run from a checkout every series would import that checkout's engram, whatever its tree.
            proc = subprocess.Popen(
                [sys.executable, "-m", "engram", "serve"], env=proc_env, stdout=log, stderr=log, cwd=tmp
            )
            print(f"{label}: engram from {_engram_source(proc_env, tmp)}", flush=True)
            url = f"http://127.0.0.1:{port}/xrpc/garden.engram.searchMemories"
            servers.append((proc, {"url": url, **material}, label))
        try:
            for _proc, target, _ in servers:
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    try:
                        urllib.request.urlopen(
                            target["url"].replace("garden.engram.searchMemories", "_health")
                        )
                        break
                    except OSError:
                        time.sleep(0.3)
                # 8 connections for 3 s: every process gets some, so each loads the index before the clock
                asyncio.run(drive(target, 8, 3.0))
            results: list[list[dict]] = [[] for _ in servers]
            rss_before = [tree_cpu_and_rss(proc.pid)[1] for proc, _, _ in servers]
            index, queries = bare_index(args.size) if args.bare else (None, None)
            bare: list[tuple[float, float]] = []  # (QPS, CPU µs per search) per bare round
            bare_p50s: list[float] = []  # with --floor: one thread's p50 per bare round
            for round_no in range(args.rounds):
                if index is not None and round_no % 2 == 0:  # the bare series takes its turn too: A B, B A
                    bare.append(bare_rate(index, queries, args.seconds))
                    bare_p50s += [bare_p50_ms(index, queries)] if args.floor else []
                for n in _round_order(len(servers), round_no):
                    proc, target, _ = servers[n]
                    cpu0, _rss = tree_cpu_and_rss(proc.pid)
                    busy0, wall0 = machine_cpu(), time.monotonic()
                    result = run_load(args, target, args.concurrency, args.seconds)
                    cpu1, rss = tree_cpu_and_rss(proc.pid)
                    busy1, wall = machine_cpu(), time.monotonic() - wall0
                    served = max(sum(result["statuses"].values()), 1)
                    result["cpu_us"] = 1e6 * (cpu1 - cpu0) / served
                    result["client_us"] = 1e6 * result["client_cpu_s"] / served
                    # Cores' worth of CPU during the round: the whole machine's, the server's, the client's.
                    result["cores_busy"] = (busy1 - busy0) / wall
                    result["cores_server"] = (cpu1 - cpu0) / wall
                    result["cores_client"] = result["client_cpu_s"] / wall
                    result["rss"] = rss
                    if args.floor:  # the same server's HTTP floor, at once, at the same concurrency
                        result["floor_p50_ms"] = run_load(
                            args, health_target(target), args.concurrency, args.seconds
                        )["p50_ms"]
                    results[n].append(result)
                if index is not None and round_no % 2 == 1:
                    bare.append(bare_rate(index, queries, args.seconds))
                    bare_p50s += [bare_p50_ms(index, queries)] if args.floor else []
        finally:
            for proc, _, _ in servers:
                proc.terminate()
                proc.wait(timeout=60)
    load = Path("/proc/loadavg").read_text().split()[0]
    print(f"size={args.size} c={args.concurrency} {args.seconds}s x {args.rounds} rounds, load {load}")
    print(f"cores this process may use: {len(os.sched_getaffinity(0))}; client: {args.client}")
    if args.json:  # for scripts/bench_report.py: the same medians, machine-readable
        args.json.write_text(
            json.dumps(_processes_summary(args, servers, results, bare, bare_p50s, [load_before, load]))
        )
    bare_qps = statistics.median(q for q, _ in bare) if bare else 0.0
    if bare:
        print(_bare_line(bare))
    if bare_p50s:
        print(f"bare FAISS index.search, 1 thread: p50 {statistics.median(bare_p50s):.3f} ms")
    for (_, _, label), rounds, before in zip(servers, results, rss_before, strict=True):
        qps = statistics.median(r["qps"] for r in rounds)
        p50 = statistics.median(r["p50_ms"] for r in rounds)
        p99 = statistics.median(r["p99_ms"] for r in rounds)

        def med(key: str) -> float:
            return statistics.median(r[key] for r in rounds)  # noqa: B023 - used at once

        print(
            f"{label}: {qps:.0f} QPS (rounds {[round(r['qps']) for r in rounds]}) "
            f"p50 {p50:.2f} ms p99 {p99:.2f} ms {_summed_statuses(rounds)}; CPU µs/request server {med('cpu_us'):.0f} "
            f"(rounds {[round(r['cpu_us']) for r in rounds]}) client "
            f"{med('client_us'):.0f}; cores busy {med('cores_busy'):.2f} (server {med('cores_server'):.2f}, "
            f"client {med('cores_client'):.2f}, the rest co-tenants)"
            + (f"; ÷ bare {qps / bare_qps:.2f}" if bare else "")
            + f"; RSS per process KiB {before} -> {rounds[-1]['rss']}"
            + (f"; HTTP floor p50 {med('floor_p50_ms'):.3f} ms" if args.floor else "")
        )


def _processes_summary(
    args: argparse.Namespace, servers: list, results: list, bare: list, bare_p50s: list, loads: list
) -> dict:
    """`--json`: per series the medians over rounds, and the bare FAISS series, with the load averages."""
    import wrk_client  # scripts/ is on the path (run_load)

    keys = ("qps", "p50_ms", "p99_ms", "cpu_us", "client_us") + (("floor_p50_ms",) if args.floor else ())
    series = [
        {
            "label": label,
            "processes": int(label.split()[0].removeprefix("ENGRAM_PROCESSES=")),  # process_series' label
            "statuses": {str(k): v for k, v in _summed_statuses(rounds).items()},
        }
        | {key: statistics.median(r[key] for r in rounds) for key in keys}
        for (_, _, label), rounds in zip(servers, results, strict=True)
    ]
    return {
        "size": args.size,
        "concurrency": args.concurrency,
        "rounds": args.rounds,
        "seconds": args.seconds,
        "client": ("wrk" if wrk_client.available() else "aiohttp") if args.client == "auto" else args.client,
        "bare_qps": statistics.median(q for q, _ in bare) if bare else None,
        "bare_cpu_us": statistics.median(cpu for _, cpu in bare) if bare else None,
        "bare_rounds": [round(q) for q, _ in bare],
        "bare_p50_ms": statistics.median(bare_p50s) if bare_p50s else None,
        # Each round's QPS ÷ that round's bare series (run just before or after it): neighbours of the same
        # moment on a machine whose co-tenants can change the bare figure 4x between rounds.
        "ratio_rounds": [
            [round(r["qps"] / b, 3) for r, (b, _) in zip(rs, bare, strict=True)] for rs in results
        ]
        if bare
        else [],
        "series": series,
        "load_average": loads,
    }


def process_series(args: argparse.Namespace) -> list[tuple[str, dict[str, str]]]:
    """(label, environment) of each `engram serve` to compare: every ENGRAM_PROCESSES value on every
    --event-loop of this tree with each --pin, then on each --tree (which runs its own default loop: an older checkout
    refuses the unknown ENGRAM_EVENT_LOOP)."""
    series = []
    for processes in args.processes:
        for loop in [] if args.only_trees else args.event_loop or [None]:
            for pin in args.pin or [None]:
                env = {"ENGRAM_PROCESSES": str(processes)} | ({"ENGRAM_EVENT_LOOP": loop} if loop else {})
                env |= {"ENGRAM_PIN_PROCESSES": pin} if pin else {}
                label = f"ENGRAM_PROCESSES={processes}" + (f" {loop}" if loop else "")
                series.append((label + (f" ENGRAM_PIN_PROCESSES={pin}" if pin else ""), env))
        for tree in args.tree or []:
            env = {"ENGRAM_PROCESSES": str(processes), "PYTHONPATH": str(tree.resolve())}
            series.append((f"ENGRAM_PROCESSES={processes} {tree}", env))
    return series


def start_server(tree: Path, size: int, workdir: Path, n: int, profile: str | None, settings: str):
    ready = workdir / f"ready-{n}.json"
    script = tree / "scripts" / "bench_throughput.py"
    if not script.exists():  # the server must import that tree's engram (benchlib puts its tree first)
        raise SystemExit(f"copy scripts/bench_throughput.py into {tree}/scripts first")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = [sys.executable, str(script), "serve", "--size", str(size), "--ready", str(ready)]
    args += ["--settings", settings] + (["--profile-out", profile] if profile else [])
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, env=env, cwd=tree)
    return proc, ready


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", nargs="?", default="bench", choices=["bench", "serve"])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", action="append", type=Path, help="engram checkout(s) to compare")
    parser.add_argument("--settings", default="{}", help="JSON of Settings fields for every server")
    parser.add_argument(
        "--tree-settings",
        action="append",
        help="JSON of Settings fields for the n-th --tree (one per --tree; e.g. each its own database_url)",
    )
    parser.add_argument("--profile", type=Path, help="directory for server-side cProfile dumps")
    parser.add_argument("--processes", type=int, nargs="+", help="compare ENGRAM_PROCESSES values")
    parser.add_argument("--event-loop", nargs="+", choices=["uvloop", "asyncio"], help="with --processes")
    parser.add_argument("--env", nargs="+", help="ENGRAM_X=value for every server (with --processes)")
    parser.add_argument(
        "--pin", nargs="+", choices=["0", "1"], help="with --processes: compare ENGRAM_PIN_PROCESSES values"
    )
    parser.add_argument(
        "--only-trees",
        action="store_true",
        help="with --processes: serve only the --tree checkouts (all through PYTHONPATH, loaded alike)",
    )
    parser.add_argument(
        "--bare",
        action="store_true",
        help="add a bare FAISS index.search series (one query per call, 2 threads, OMP 1)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="with --processes: after each round, the same server's /xrpc/_health under the same load (the "
        "HTTP floor's p50); with --bare, also bare FAISS's one-thread p50",
    )
    parser.add_argument(
        "--client",
        choices=["auto", "wrk", "aiohttp"],
        default="auto",
        help="load generator: wrk (C, ~10x less CPU per request) when installed, else aiohttp",
    )
    parser.add_argument("--json", type=Path, help="with --processes: also write the medians as JSON here")
    parser.add_argument("--ready", type=Path)
    parser.add_argument("--profile-out")
    args = parser.parse_args()
    if args.mode == "serve":
        sys.path.insert(0, str(HERE))
        asyncio.run(serve(args.size, args.ready, args.profile_out, args.settings))
        return
    if args.processes:
        bench_processes(args)
        return
    trees = args.tree or [HERE.parent]
    with tempfile.TemporaryDirectory(prefix="engram-thr-") as tmp:
        servers = []
        for n, tree in enumerate(trees):
            profile = str(args.profile / f"{n}.prof") if args.profile else None
            settings = args.tree_settings[n] if args.tree_settings else args.settings
            servers.append(start_server(tree.resolve(), args.size, Path(tmp), n, profile, settings))
        try:
            for proc, ready in servers:
                while not ready.exists():
                    if proc.poll() is not None:
                        raise SystemExit("a server exited before it was ready")
                    time.sleep(0.2)
            targets = [json.loads(ready.read_text()) for _, ready in servers]
            rounds: list[list[dict]] = [[] for _ in servers]
            bare: list[tuple[float, float]] = []  # (QPS, CPU µs per search) per bare round
            index, queries = bare_index(args.size) if args.bare else (None, None)
            for round_no in range(args.rounds):
                if index is not None and round_no % 2 == 0:  # the bare series takes its turn too: A B, B A
                    bare.append(bare_rate(index, queries, args.seconds))
                for n in _round_order(len(targets), round_no):
                    target = targets[n]
                    cpu0 = cpu_seconds(servers[n][0].pid)
                    result = run_load(args, target, args.concurrency, args.seconds)
                    served = sum(result["statuses"].values())
                    result["cpu_us"] = 1e6 * (cpu_seconds(servers[n][0].pid) - cpu0) / max(served, 1)
                    rounds[n].append(result)
                if index is not None and round_no % 2 == 1:
                    bare.append(bare_rate(index, queries, args.seconds))
        finally:
            for proc, _ in servers:
                proc.stdin.close()
                proc.wait(timeout=60)
    load = Path("/proc/loadavg").read_text().split()[0]
    print(f"size={args.size} c={args.concurrency} {args.seconds}s x {args.rounds} rounds, load {load}")
    bare_qps = statistics.median(q for q, _ in bare) if bare else 0.0
    if bare:
        print(_bare_line(bare))
    for tree, results in zip(trees, rounds, strict=True):
        qps = statistics.median(r["qps"] for r in results)
        p50 = statistics.median(r["p50_ms"] for r in results)
        p99 = statistics.median(r["p99_ms"] for r in results)
        statuses = {k: sum(r["statuses"].get(k, 0) for r in results) for k in results[0]["statuses"]}
        cpu = statistics.median(r["cpu_us"] for r in results)
        rounds_qps = [round(r["qps"]) for r in results]
        print(
            f"{tree}: {qps:.0f} QPS (rounds {rounds_qps}) p50 {p50:.2f} ms p99 {p99:.2f} ms {statuses}; "
            f"server CPU {cpu:.0f} µs per request (rounds {[round(r['cpu_us']) for r in results]})"
            + (f"; ÷ bare {qps / bare_qps:.2f}" if bare else "")
        )


if __name__ == "__main__":
    main()
