"""A re-import of an unchanged file through the `engram` CLI, against the first import of it
(docs/benchmarks.md#re-importing-an-unchanged-file).

Generates `--lines` text-only JSONL lines (no vectors: each would be embedded with the space's model), creates
a hosted space in a fresh data directory with `engram space create`, imports the file once with
`engram import` (every line embedded and written), then imports the same file `--rounds` more times. Each
run is its own `engram` process, as a user runs it, so its wall time includes the interpreter's start, the
CLI's imports and, where anything is embedded, the model's load. Reported per run: wall seconds, the
process's peak RSS (a re-import that loads the model shows it), and the import's own report (created /
unchanged lines).

    .venv/bin/python scripts/bench_reimport.py                    # 10,000 lines, the built-in model
    .venv/bin/python scripts/bench_reimport.py --lines 2000 --embedder hashing
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_import import texts


def write_lines(path: Path, count: int) -> None:
    with path.open("w") as out:
        for i, text in enumerate(texts(count, 1)):  # bench_import's generated notes
            line = {"text": text, "tags": [f"t{i % 7}"], "createdAt": f"2026-11-{1 + i % 28:02d}T10:00:00Z"}
            out.write(json.dumps(line) + "\n")


def engram(args: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """Run `engram <args>`: (wall seconds, the process's own peak RSS in MiB, stdout)."""
    command = [str(Path(sys.executable).with_name("engram")), *args]
    with tempfile.TemporaryFile("w+") as errors:  # progress bars: a file, so no pipe fills up
        start = time.perf_counter()
        proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=errors, text=True)
        assert proc.stdout is not None
        stdout = proc.stdout.read()
        # wait4 reaps the child with its own rusage (RUSAGE_CHILDREN's maxrss is the largest child so far)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            errors.seek(0)
            raise SystemExit(f"engram {' '.join(args)} failed:\n{errors.read()}")
    return wall, usage.ru_maxrss // 1024, stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3, help="re-imports after the first import")
    parser.add_argument("--embedder", help="ENGRAM_EMBEDDER (default: the built-in model)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="engram-reimport-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
        env["ENGRAM_DATA_DIR"] = str(Path(tmp) / "data")
        if args.embedder:
            env["ENGRAM_EMBEDDER"] = args.embedder
        lines = Path(tmp) / "memories.jsonl"
        write_lines(lines, args.lines)
        engram(["space", "create", "notes"], env)
        runs = []
        for n in range(args.rounds + 1):
            wall, rss, out = engram(["import", "notes", str(lines), "--json"], env)
            report = json.loads(out)
            runs.append({"run": "first import" if n == 0 else f"re-import {n}", "seconds": round(wall, 2),
                         "peak_rss_mib": rss, "created": report["created"], "unchanged": report["unchanged"]})  # fmt: skip
            print(json.dumps(runs[-1]), flush=True)
    again = [r["seconds"] for r in runs[1:]]
    print(
        f"{args.lines:,} lines: first import {runs[0]['seconds']:.2f} s; re-import median "
        f"{statistics.median(again):.2f} s (runs {', '.join(f'{s:.2f}' for s in again)}); load average "
        f"{Path('/proc/loadavg').read_text().split()[0]}"
    )


if __name__ == "__main__":
    main()
