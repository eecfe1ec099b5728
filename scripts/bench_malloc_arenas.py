"""RSS and CPU per request of `engram serve` under glibc malloc settings, side by side
(docs/benchmarks.md#throughput, "RSS on uvloop").

Every start is a fresh `engram serve` subprocess over one seeded space; configurations alternate start by
start so co-tenant noise hits them alike. Per start: VmRSS after the first signed searches (8 sent at once to
the cold server: they all wait on the index load), then after `--seconds` of signed searches at c=8, and
the server's CPU time per request of those.
The mallopt / malloc_trim variants are applied by a small wrapper before `engram serve` starts (ctypes,
glibc only), so the same tree measures them all.

    .venv/bin/python scripts/bench_malloc_arenas.py --size 10000 --starts 4
    # the first search builds the index from the store (no saved file), where the extra RSS shows:
    .venv/bin/python scripts/bench_malloc_arenas.py --build
    # CPU per request of long-lived servers, rounds alternating between them:
    .venv/bin/python scripts/bench_malloc_arenas.py --cpu-rounds 6 --concurrency 32 \
        --only "uvloop, glibc default arenas" "uvloop + M_TRIM_THRESHOLD/M_MMAP_THRESHOLD 128 KiB"
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_throughput import cpu_seconds, drive, seed_data_dir, serve_env

# glibc mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8

WRAPPER = """
import ctypes, runpy, sys
libc = ctypes.CDLL("libc.so.6")
if not {engram_default}:  # engram serve's own mallopt (engram/serving/malloc_thresholds.py) off
    from engram.serving import malloc_thresholds
    malloc_thresholds.fix_malloc_thresholds = lambda *args, **kwargs: None
for param, value in {options}:
    assert libc.mallopt(param, value) == 1
if {trim_after_load}:
    from engram.search import manager
    original = manager.IndexManager._load
    async def load_then_trim(self, *args, **kwargs):
        entry = await original(self, *args, **kwargs)
        libc.malloc_trim(0)
        return entry
    manager.IndexManager._load = load_then_trim
sys.argv = ["engram", "serve"]
runpy.run_module("engram", run_name="__main__")
"""

CONFIGS: dict[str, tuple[dict[str, str], list[tuple[int, int]], bool, bool]] = {
    # label: (environment, mallopt calls at start-up, malloc_trim(0) after each index load, engram serve's
    # own malloc settings left on; off, each configuration is glibc's defaults plus its own change)
    "uvloop, glibc default arenas": ({}, [], False, False),
    "uvloop + MALLOC_ARENA_MAX=1": ({"MALLOC_ARENA_MAX": "1"}, [], False, False),
    "uvloop + mallopt(M_ARENA_MAX, 1)": ({}, [(M_ARENA_MAX, 1)], False, False),
    "uvloop + mallopt(M_ARENA_MAX, 2)": ({}, [(M_ARENA_MAX, 2)], False, False),
    "uvloop + malloc_trim(0) after load": ({}, [], True, False),
    "uvloop + M_TRIM_THRESHOLD/M_MMAP_THRESHOLD 128 KiB": (
        {},
        [(M_TRIM_THRESHOLD, 128 * 1024), (M_MMAP_THRESHOLD, 128 * 1024)],
        False,
        False,
    ),
    "engram serve as shipped (uvloop, 128 KiB thresholds)": ({}, [], False, True),
    "asyncio, glibc default arenas": ({"ENGRAM_EVENT_LOOP": "asyncio"}, [], False, False),
}


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


async def first_searches(target: dict, connections: int) -> set[int]:
    """`connections` signed searches sent at once to a cold server: all of them wait on the first index
    load (with 8, as in bench_throughput.py's warm-up, the RSS difference showed in every run)."""
    import aiohttp

    async def one(session: aiohttp.ClientSession, n: int) -> int:
        params = target["params"][n % len(target["params"])]
        async with session.get(target["url"], params=params, headers=target["headers"]) as r:
            await r.read()
            return r.status

    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=connector) as session:
        return set(await asyncio.gather(*(one(session, n) for n in range(connections))))


def start(env: dict[str, str], options, trim: bool, as_shipped: bool, log: Path) -> subprocess.Popen:
    code = WRAPPER.format(options=options, trim_after_load=trim, engram_default=as_shipped)
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=out, stderr=out)


def wait_ready(proc: subprocess.Popen, target: dict, log: Path) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(target["url"].replace("garden.engram.searchMemories", "_health"))
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"server did not start, see {log}") from None
            time.sleep(0.2)


def one_start(env: dict[str, str], config, target: dict, args: argparse.Namespace, log: Path) -> dict:
    seconds = args.seconds
    if args.build:  # no saved index: the first search builds it from the store (as after a write or import)
        shutil.rmtree(Path(env["ENGRAM_DATA_DIR"]) / "indexes", ignore_errors=True)
    proc = start(env, *config, log)
    try:
        wait_ready(proc, target, log)
        statuses = asyncio.run(first_searches(target, args.first_connections))  # loads the index
        assert statuses == {200}, statuses
        rss_first = rss_kib(proc.pid)
        cpu0 = cpu_seconds(proc.pid)
        result = asyncio.run(drive(target, 8, seconds))
        served = sum(result["statuses"].values())
        return {
            "rss_first": rss_first,
            "rss_after": rss_kib(proc.pid),
            "cpu_us": 1e6 * (cpu_seconds(proc.pid) - cpu0) / served,
            "qps": result["qps"],
            "served": served,
        }
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def cpu_per_request(configs: dict, env: dict, material: dict, args: argparse.Namespace, tmp: Path) -> None:
    """One long-lived server per configuration, warmed up, then `--cpu-rounds` rounds alternating between
    them: the median server CPU per request (the QPS follows what co-tenants leave, the CPU does not)."""
    servers = []
    try:
        for n, (label, (extra_env, options, trim, as_shipped)) in enumerate(configs.items()):
            port = 18691 + n
            url = f"http://127.0.0.1:{port}/xrpc/garden.engram.searchMemories"
            proc = start(
                env | extra_env | {"ENGRAM_PORT": str(port)}, options, trim, as_shipped, tmp / f"cpu-{n}.log"
            )
            servers.append((label, proc, {"url": url, **material}, []))
        for _label, proc, target, _ in servers:
            wait_ready(proc, target, tmp / "cpu.log")
            asyncio.run(drive(target, args.concurrency, 2.0))
        for _ in range(args.cpu_rounds):
            for _label, proc, target, rounds in servers:
                cpu0 = cpu_seconds(proc.pid)
                result = asyncio.run(drive(target, args.concurrency, args.seconds))
                served = sum(result["statuses"].values())
                rounds.append(
                    (1e6 * (cpu_seconds(proc.pid) - cpu0) / served, result["qps"], rss_kib(proc.pid))
                )
    finally:
        for _, proc, _, _ in servers:
            proc.terminate()
            proc.wait(timeout=60)
    load = Path("/proc/loadavg").read_text().split()[0]
    print(f"size={args.size} c={args.concurrency}, {args.cpu_rounds} rounds of {args.seconds}s, load {load}")
    for label, _, _, rounds in servers:
        cpu = [round(r[0]) for r in rounds]
        print(
            f"{label}: server CPU {statistics.median(cpu):.0f} µs/request (rounds {cpu}), "
            f"{statistics.median(r[1] for r in rounds):.0f} QPS, RSS {rounds[-1][2] // 1024} MiB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--starts", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--cpu-rounds", type=int, help="instead: CPU per request, long-lived servers, rounds")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--build", action="store_true", help="remove the saved index before each start: the first load builds"
    )
    parser.add_argument("--first-connections", type=int, default=8, help="searches sent at once, cold")
    parser.add_argument("--only", nargs="*", help="labels to run (default: all)")
    args = parser.parse_args()
    configs = {k: v for k, v in CONFIGS.items() if not args.only or k in args.only}
    with tempfile.TemporaryDirectory(prefix="engram-arenas-") as tmp:
        env = serve_env(tmp, drop=("ENGRAM_", "MALLOC_")) | {"ENGRAM_PROCESSES": "1", "ENGRAM_PORT": "18690"}
        material = asyncio.run(seed_data_dir(Path(tmp) / "data", env, args.size))
        target = {"url": "http://127.0.0.1:18690/xrpc/garden.engram.searchMemories", **material}
        if args.cpu_rounds:
            return cpu_per_request(configs, env, material, args, Path(tmp))
        results: dict[str, list[dict]] = {label: [] for label in configs}
        for n in range(args.starts):
            for label, (extra_env, options, trim, as_shipped) in configs.items():
                r = one_start(
                    env | extra_env, (options, trim, as_shipped), target, args, Path(tmp) / "serve.log"
                )
                results[label].append(r)
                print(
                    f"start {n} {label}: RSS {r['rss_first'] // 1024} -> {r['rss_after'] // 1024} MiB, "
                    f"{r['cpu_us']:.0f} µs/request, {r['qps']:.0f} QPS",
                    flush=True,
                )
    load = Path("/proc/loadavg").read_text().split()[0]
    built = "built from the store" if args.build else "saved index"
    print(
        f"\nsize={args.size}, {args.starts} starts each, first {args.first_connections} searches at once "
        f"({built}), c=8 for {args.seconds}s, load {load}"
    )
    print("| configuration | RSS after first searches, MiB (median; each) | after N searches | CPU µs/req |")
    print("|---|---|---|---|")
    for label, rs in results.items():
        first = [r["rss_first"] // 1024 for r in rs]
        after = [r["rss_after"] // 1024 for r in rs]
        cpu = statistics.median(r["cpu_us"] for r in rs)
        print(
            f"| {label} | {statistics.median(first):.0f} ({', '.join(map(str, first))}) | "
            f"{statistics.median(after):.0f} ({', '.join(map(str, after))}) | {cpu:.0f} |"
        )


if __name__ == "__main__":
    main()
