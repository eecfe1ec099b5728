"""A 100-page text PDF ingested and searchable (docs/benchmarks.md#document-ingestion-scriptsbench_ingestpy).

Generates the PDF with fpdf2 (a test dependency; about 330 words a page, each page naming its own
"inspection code" so a query has exactly one right page), opens a fresh data dir with the built-in MiniLM
embedder on `ENGRAM_WORKERS` threads (default 2), then times, per round: `DocumentService.ingest`
(extraction, chunking, embedding, the one-transaction write) and the first MCP `recall` that must return
the right page's chunk (index load included). Prints pages/s, chunks/s and the load average.

    .venv/bin/python scripts/bench_ingest.py --pages 100 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fpdf import FPDF

from engram.config import read_env
from engram.lifecycle import open_context
from engram.mcp.access import McpAccess
from engram.mcp.operations import MemoryOperations

WORDS = [
    "the",
    "inspection",
    "of",
    "each",
    "valve",
    "follows",
    "the",
    "maintenance",
    "schedule",
    "and",
    "records",
    "pressure",
    "readings",
    "while",
    "the",
    "crew",
    "checks",
    "seals",
    "gaskets",
    "pumps",
    "filters",
    "and",
    "the",
    "control",
    "panel",
    "before",
    "the",
    "shift",
    "report",
    "is",
    "signed",
]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def make_pdf(pages: int, seed: int) -> tuple[bytes, dict[int, str]]:
    rng = random.Random(seed)
    codes = {}
    document = FPDF()
    document.set_font("helvetica", size=10)
    for page in range(1, pages + 1):
        code = f"K{rng.randint(10_000, 99_999)}"
        codes[page] = code
        document.add_page()
        for paragraph in range(6):
            words = [rng.choice(WORDS) for _ in range(55)]
            if paragraph == 2:
                words[10:10] = f"inspection code {code} applies to station {page}".split()
            document.multi_cell(0, 5, " ".join(words).capitalize() + ".")
            document.ln(3)
    return bytes(document.output()), codes


async def run(args: argparse.Namespace) -> None:
    totals, ingests, searches, chunk_counts, cpu = [], [], [], [], []
    with tempfile.TemporaryDirectory(prefix="engram-ingest-") as tmp:
        env = {k: v for k, v in os.environ.items() if k.startswith("ENGRAM_")}
        settings = replace(read_env(env), data_dir=Path(tmp))
        async with open_context(settings) as ctx:
            for r in range(args.rounds):
                data, codes = make_pdf(args.pages, r)
                space = await ctx.services.spaces.create_hosted(f"ingest-{r}")
                access = McpAccess({"1": space.uri}, frozenset({space.uri}), space.uri, "bench", None)
                t0 = time.perf_counter()
                c0 = _cpu()
                result = await ctx.services.documents.ingest(space.uri, data, name="manual.pdf")
                t1 = time.perf_counter()
                page = args.pages // 2 + 7
                found = await MemoryOperations(ctx).recall(access, f"inspection code {codes[page]}", limit=3)
                t2 = time.perf_counter()
                cpu.append(_cpu() - c0)
                top = found["results"][0]
                assert top["citation"]["page"] == page, (top["citation"], page)
                assert result.pages == args.pages
                ingests.append(t1 - t0)
                searches.append(t2 - t1)
                totals.append(t2 - t0)
                chunk_counts.append(result.chunks)
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    total = statistics.median(totals)
    ingest = statistics.median(ingests)
    print(
        f"{args.pages}-page PDF ({len(data)} bytes), {chunk_counts[0]} chunks, {settings.workers} workers, load {load}"
    )
    print(f"ingest: median {ingest:.2f} s (rounds {[round(x, 2) for x in ingests]})")
    print(f"first search: median {statistics.median(searches):.2f} s")
    print(f"ingested and searchable: median {total:.2f} s (rounds {[round(x, 2) for x in totals]})")
    print(f"{args.pages / ingest:.1f} pages/s, {chunk_counts[0] / ingest:.1f} chunks/s")
    # CPU seconds the process spent (all threads): on an otherwise idle machine the wall time is about
    # this divided by the workers, which a shared machine's wall clock cannot show.
    print(f"process CPU for ingest + search: median {statistics.median(cpu):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
