"""Text-only import throughput against the embedder's own throughput on the same worker pool
(docs/benchmarks.md#throughput).

Both series use the built-in MiniLM embedder on `ENGRAM_WORKERS` threads (default 2), interleaved over
rounds: *embedder* embeds N texts in 64-text chunks with every worker busy (the ceiling); *import* runs
`import_values` on N text-only lines into a fresh hosted space (embedding + SQLite writes). The ratio
import ÷ embedder is what an import leaves on the table.

    .venv/bin/python scripts/bench_import.py --memories 1000 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engram.config import read_env
from engram.lifecycle import open_context
from engram.service.imports import import_values

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "build",
    "server",
    "deploy",
    "token",
    "cache",
    "index",
    "query",
    "vector",
    "memory",
    "space",
    "note",
]


def texts(n: int, salt: int) -> list[str]:
    return [
        f"{salt} note {i}: "
        + " ".join(WORDS[(i * 7 + j * 3 + salt) % len(WORDS)] for j in range(12 + i % 20))
        for i in range(n)
    ]


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="engram-import-") as tmp:
        env = {k: v for k, v in os.environ.items() if k.startswith("ENGRAM_")}
        settings = replace(read_env(env), data_dir=Path(tmp))
        async with open_context(settings) as ctx:
            pool, embedder = ctx.pool, ctx.embedder
            rates: dict[str, list[float]] = {"embedder": [], "import": []}
            for r in range(args.rounds):
                batch = texts(args.memories, 2 * r)
                t0 = time.perf_counter()
                chunks = [batch[i : i + 64] for i in range(0, len(batch), 64)]
                await asyncio.gather(*(pool.run(embedder.embed, c, "document") for c in chunks))
                rates["embedder"].append(len(batch) / (time.perf_counter() - t0))

                space = await ctx.services.spaces.create_hosted(f"import-{r}")
                lines = [(i + 1, {"text": t}) for i, t in enumerate(texts(args.memories, 2 * r + 1))]
                t0 = time.perf_counter()
                report = await import_values(
                    ctx.store, ctx.services.spaces, ctx.services.memories, space.uri, lines
                )
                rates["import"].append(len(lines) / (time.perf_counter() - t0))
                assert report.created == len(lines), report
    load = Path("/proc/loadavg").read_text().split()[0]
    emb, imp = statistics.median(rates["embedder"]), statistics.median(rates["import"])
    print(f"{args.memories} memories x {args.rounds} rounds, {settings.workers} workers, load {load}")
    print(f"embedder: {emb:.0f} memories/s (rounds {[round(x) for x in rates['embedder']]})")
    print(f"import:   {imp:.0f} memories/s (rounds {[round(x) for x in rates['import']]})")
    print(f"import / embedder: {imp / emb:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
