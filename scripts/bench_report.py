"""Regenerate the headline ratio tables of docs/benchmarks.md and the README from one run
(docs/benchmarks.md#headline-ratios), instead of editing them by hand.

Everything is measured side by side in this one run, on this machine, and written with the commit, the
load average before and after each part and the bare baseline as a user measures it (FAISS `index.search`
of one query per call, OpenMP pinned to one thread: two threads for QPS, one for latency):

  - 10k memories, c=32: `engram serve` under wrk, interleaved with the bare FAISS series
    (scripts/bench_throughput.py --processes 1 N --bare): QPS, QPS ÷ bare, server CPU per request, with
    one serving process and with `engram serve`'s default, one per usable core (N; ENGRAM_PROCESSES).
    The QPS goal is read on the default, what a user runs; the CPU goal on one process, where no second
    process's share of the machine blurs it;
  - 10k memories, c=1: e2e p50 ÷ (bare FAISS p50 + the HTTP floor p50), twice: a single wrk connection
    against the default `engram serve` beside the same server's `/xrpc/_health` (scripts/bench_throughput.py
    --concurrency 1 --floor), and client and server on one loop in one process (scripts/bench_search.py);
  - with --writes: acknowledged Sim writes/s at c=1 and c=32, one SQLite node, with one serving process and
    with the default (scripts/bench_writes.py; wrk as the client where it is installed).

The generated text sits between `<!-- bench_report:begin -->` and `<!-- bench_report:end -->` in each file,
so a rerun replaces it (and nothing else).

    .venv/bin/python scripts/bench_report.py              # quick (default): a few minutes
    .venv/bin/python scripts/bench_report.py --long       # more and longer rounds, and 100k at c=1
    .venv/bin/python scripts/bench_report.py --writes     # also the write path
    .venv/bin/python scripts/bench_report.py --no-write   # print the section, change no file
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from engram.affinity import usable_cores

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
BEGIN, END = "<!-- bench_report:begin -->", "<!-- bench_report:end -->"
TARGETS = (ROOT / "docs/benchmarks.md", ROOT / "README.md")

# The goals the section is read against (issue 33 §2 and §1; docs/benchmarks.md#headline-ratios).
GOAL_QPS_RATIO = 0.6
GOAL_CPU_US = 350
# The same goal as a share of bare FAISS's own CPU per search, which a machine's speed moves alike: the
# issue's run had bare FAISS at 8,146 QPS on two threads, 245 µs a search, so 350 µs was 1.43x of it.
GOAL_CPU_BARE_RATIO = round(GOAL_CPU_US / (2e6 / 8146), 2)
GOAL_C1_RATIO = 1.6
# Issue 33's acknowledged-write goals on SQLite, one node.
GOAL_WRITES_C1, GOAL_WRITES_C32, GOAL_WRITE_CPU_MS, GOAL_WRITE_P99_MS = 300, 1500, 0.8, 100


def load_average() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def commit() -> str:
    """The short commit, marked when the working tree differs from it (what was measured is not it) in any
    tracked file but the ones this script writes."""
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    generated = [f":(exclude){path.relative_to(ROOT)}" for path in TARGETS]
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *generated],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return f"{head}+uncommitted changes" if dirty else head


def _env() -> dict[str, str]:
    # The bare series pin OpenMP to one thread, as engram's search workers do (engram/workers.py).
    return os.environ | {"OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


def run_throughput(
    size: int, concurrency: int, seconds: float, rounds: int, processes: list[int], *, floor: bool = False
) -> dict:
    """scripts/bench_throughput.py's JSON summary; `floor`: with each server's HTTP floor and bare FAISS's
    one-thread p50 (the single-client series)."""
    with tempfile.TemporaryDirectory(prefix="engram-report-") as tmp:
        out = Path(tmp) / "throughput.json"
        command = [sys.executable, str(SCRIPTS / "bench_throughput.py"), "--bare"] + (
            ["--floor"] if floor else []
        )
        command += ["--processes", *map(str, processes)]
        command += ["--size", str(size), "--concurrency", str(concurrency), "--seconds", str(seconds)]
        command += ["--rounds", str(rounds), "--json", str(out)]
        subprocess.run(command, cwd=ROOT, env=_env(), check=True)
        result: dict = json.loads(out.read_text())
    return result


def run_search(sizes: list[int], rounds: int, count: int) -> list[dict]:
    command = [sys.executable, str(SCRIPTS / "bench_search.py"), "--sizes", *map(str, sizes)]
    command += ["--rounds", str(rounds), "--count", str(count), "--event-loop", "uvloop"]
    done = subprocess.run(command, cwd=ROOT, env=_env(), check=True, capture_output=True, text=True)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def run_writes(seconds: float, processes: list[int]) -> list[dict]:
    """scripts/bench_writes.py on this tree alone: SQLite, one space, c=1 and c=32, once per
    ENGRAM_PROCESSES value (its JSON rows, the client it used and the load average around each run)."""
    runs = []
    for count in processes:
        command = [sys.executable, str(SCRIPTS / "bench_writes.py"), "--tree", f"now={ROOT}"]
        command += ["--seconds", str(seconds), "--concurrency", "1", "32", "--spaces", "1"]
        command += ["--processes", str(count)]
        before = load_average()
        done = subprocess.run(command, cwd=ROOT, env=_env(), check=True, capture_output=True, text=True)
        rows = [
            r
            for line in done.stdout.splitlines()
            if line.startswith('{"') and "now" in (r := json.loads(line))
        ]
        runs.append(
            {
                "processes": count,
                "client": rows[-1].get("client", "aiohttp") if rows else "aiohttp",
                "rows": rows,
                "load_average": [before, load_average()],
            }
        )
    return runs


def write_goals(c: int, now: dict) -> str:
    """Issue 33's write goals for SQLite, one node, read on the row they are set for."""
    if c == 1:
        return f"≥ {GOAL_WRITES_C1:,}/s: {_verdict(now['writes_per_s'] >= GOAL_WRITES_C1)}"
    if c != 32:
        return ""
    return "; ".join(
        [
            f"≥ {GOAL_WRITES_C32:,}/s: {_verdict(now['writes_per_s'] >= GOAL_WRITES_C32)}",
            f"≤ {GOAL_WRITE_CPU_MS} ms: {_verdict(now['cpu_ms_per_write'] <= GOAL_WRITE_CPU_MS)}",
            f"p99 ≤ {GOAL_WRITE_P99_MS} ms: {_verdict(now['p99_ms'] <= GOAL_WRITE_P99_MS)}",
        ]
    )


def _n(value: float) -> str:
    return f"{value:,.0f}"


def _verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"


def render(
    when: str,
    revision: str,
    cpus: int,
    throughput: dict,
    search: list[dict],
    writes: list[dict] | None,
    processes: list[int],
    single: dict | None = None,
) -> str:
    """The generated section (markdown), from the parts' results."""
    bare = throughput["bare_qps"]
    load_t = " → ".join(throughput["load_average"])
    lines = [
        (
            f"Generated by `scripts/bench_report.py` at commit `{revision}`, {when}, {cpus} CPUs; each row one "
            "side-by-side run. *bare FAISS* is `index.search` of one query per call on the same vectors "
            "(`IndexScalarQuantizer` fp16, inner product), OpenMP pinned to one thread; its CPU per search is "
            "its threads' own. The CPU goal is stated twice: in µs, as issue 33 set it on a machine where bare "
            f"FAISS ran 8,146 QPS, and as that share of bare FAISS's CPU per search ({GOAL_CPU_BARE_RATIO}×), "
            "which moves with the machine as engram's does."
        ),
        "",
        "| signed `searchMemories` | engram | bare FAISS | ratio | goal | load average |",
        "|---|---|---|---|---|---|",
    ]
    default = processes[-1]
    for served, rounds in zip(throughput["series"], throughput["ratio_rounds"], strict=True):
        count = served["processes"]
        # the median of the rounds' own ratios (each round beside its bare round), not a ratio of medians
        ratio = statistics.median(rounds)
        what = (
            f"{count} process" + ("es" if count > 1 else "") + (", the default" if count == default else "")
        )
        qps_goal = f"≥ {GOAL_QPS_RATIO}×: {_verdict(ratio >= GOAL_QPS_RATIO)}" if count == default else ""
        cpu_goal = f"≤ {GOAL_CPU_US} µs: {_verdict(served['cpu_us'] <= GOAL_CPU_US)}" if count == 1 else ""
        bare_cpu, cpu_ratio = "", ""
        if throughput.get("bare_cpu_us"):
            share = served["cpu_us"] / throughput["bare_cpu_us"]
            bare_cpu, cpu_ratio = f"{_n(throughput['bare_cpu_us'])} µs per search", f"{share:.2f}× bare"
            if count == 1:
                cpu_goal += f"; ≤ {GOAL_CPU_BARE_RATIO}× bare: {_verdict(share <= GOAL_CPU_BARE_RATIO)}"
        lines += [
            (
                f"| {throughput['size']:,} memories, c={throughput['concurrency']}, QPS "
                f"(`engram serve`, {what}, {throughput['client']}) | {_n(served['qps'])} | {_n(bare)} "
                f"(2 threads) | **{ratio:.3f}×** | {qps_goal} | {load_t} |"
            ),
            (
                f"| same run, server CPU per request | {_n(served['cpu_us'])} µs | {bare_cpu} | {cpu_ratio} "
                f"| {cpu_goal} | {load_t} |"
            ),
        ]
    if single is not None:
        for served in single["series"]:
            base = single["bare_p50_ms"] + served["floor_p50_ms"]
            ratio = served["p50_ms"] / base
            count = served["processes"]
            what = (
                f"{count} process"
                + ("es" if count > 1 else "")
                + (", the default" if count == default else "")
            )
            lines.append(
                f"| {single['size']:,} memories, c=1 (`engram serve`, {what}, {single['client']}), e2e p50 ÷ "
                f"(bare + HTTP floor) | {served['p50_ms']:.2f} ms | {single['bare_p50_ms']:.2f} + floor "
                f"{served['floor_p50_ms']:.2f} = {base:.2f} ms (1 thread) | **{ratio:.3f}** "
                f"| ≤ {GOAL_C1_RATIO}: {_verdict(ratio <= GOAL_C1_RATIO)} | {' → '.join(single['load_average'])} |"
            )
    for r in search:
        base = r["bare_p50_ms"] + r["floor_p50_ms"]
        goal = f"≤ {GOAL_C1_RATIO}: {_verdict(r['ratio_p50'] <= GOAL_C1_RATIO)}" if r["n"] <= 10_000 else ""
        lines.append(
            f"| {r['n']:,} memories, c=1, e2e p50 ÷ (bare + HTTP floor) | {r['e2e_p50_ms']:.2f} ms "
            f"| {r['bare_p50_ms']:.2f} + floor {r['floor_p50_ms']:.2f} = {base:.2f} ms (1 thread) "
            f"| **{r['ratio_p50']:.3f}** | {goal} | {r['load_avg'].replace('->', '→')} |"
        )
    if writes is not None:
        lines += [
            "",
            (
                "| acknowledged Sim writes, SQLite, one node, one space | writes/s | p99 ms | server CPU per write "
                "| goal | load average |"
            ),
            "|---|---|---|---|---|---|",
        ]
        for run in writes:
            count = run["processes"]
            what = (
                f"{count} process"
                + ("es" if count > 1 else "")
                + (", the default" if count == default else "")
            )
            for row in run["rows"]:
                now = row["now"]
                lines.append(
                    f"| c={row['c']} (`engram serve`, {what}, {run['client']}) | {_n(now['writes_per_s'])} "
                    f"| {now['p99_ms']:.1f} | {now['cpu_ms_per_write']:.2f} ms | {write_goals(row['c'], now)} "
                    f"| {' → '.join(run['load_average'])} |"
                )
    lines += [
        "",
        (
            f"QPS on this shared machine follows what co-tenants leave (the bare series' {throughput['rounds']} "
            f"rounds: {', '.join(map(_n, throughput['bare_rounds']))}), so the c=32 ratio is the median of "
            "each round's QPS ÷ the bare round beside it ("
            + "; ".join(", ".join(f"{r:.2f}" for r in rounds) for rounds in throughput["ratio_rounds"])
            + "); read the ratios and the CPU per request."
        ),
    ]
    return "\n".join(lines)


def replace_section(text: str, section: str, *, name: str = "file") -> str:
    """`text` with the part between the markers replaced by `section` (markers kept); exactly one pair."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ValueError(f"{name} needs exactly one {BEGIN} ... {END} pair, in that order")
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{section}\n{END}{tail}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--long", action="store_true", help="5 rounds of 5 s at c=32, 100k too at c=1")
    parser.add_argument("--writes", action="store_true", help="also run scripts/bench_writes.py (SQLite)")
    parser.add_argument("--no-write", action="store_true", help="print the section, change no file")
    parser.add_argument("--size", type=int, default=10_000, help="memories in the c=32 space")
    args = parser.parse_args()
    seconds, rounds = (5.0, 5) if args.long else (3.0, 3)
    sizes = [args.size, 100_000] if args.long else [args.size]
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    revision = commit()
    processes = sorted({1, usable_cores()})  # one process, and `engram serve`'s default
    throughput = run_throughput(args.size, 32, seconds, rounds, processes)
    single = run_throughput(args.size, 1, seconds, rounds, processes[-1:], floor=True)
    search = run_search(sizes, rounds=5 if args.long else 3, count=100)
    writes = run_writes(5.0 if args.long else 2.0, processes) if args.writes else None
    section = render(when, revision, os.cpu_count() or 0, throughput, search, writes, processes, single)
    print(section)
    if not args.no_write:
        for path in TARGETS:
            path.write_text(replace_section(path.read_text(), section, name=str(path.relative_to(ROOT))))
            print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
