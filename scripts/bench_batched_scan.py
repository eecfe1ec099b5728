"""Lone FAISS scans against batched scans of the same exact index, side by side (docs/benchmarks.md#batched-scans).

For each space size and batch size it times, in alternating rounds on one thread, `SpaceIndex.search` once
per query (FAISS's 8-bit scan of the int8 rows) and `SpaceIndex.search_many` over the whole batch
(onnxruntime's MatMulInteger over the same rows), each with the same exact re-score and certified band, and
reports milliseconds per query and their ratio. It also
checks that both return the same hits. The batch size at which the ratio passes 1 is `MIN_BATCH` in
engram/search/search_job.py.

    .venv/bin/python scripts/bench_batched_scan.py                       # 10k and 100k, batches 1-32
    .venv/bin/python scripts/bench_batched_scan.py --sizes 1000000 --batches 16
"""

from __future__ import annotations

import argparse
import functools
import itertools
import statistics
import time

from benchlib import latent, load_average

from engram.search.filters import Filters
from engram.search.index import IndexTuning, SpaceIndex
from engram.search.rows import IndexRows


def build(size: int, dims: int = 384) -> SpaceIndex:
    import numpy as np

    rows = IndexRows(
        np.arange(1, size + 1, dtype=np.int64),
        latent(size, dims, seed=1).astype(np.float16),
        ["did:web:bench.test"] * size,
        np.arange(size, dtype=np.int64),  # created_at = position: `since` allows a known fraction
        [()] * size,
    )
    return SpaceIndex.build(rows, dims, 1, IndexTuning(exact_max=1_000_000))


def search_each(index: SpaceIndex, filters, queries) -> None:
    for query in queries:
        index.search(query, 10, filters, float("inf"))


def search_all(index: SpaceIndex, filters, queries) -> None:
    """As a batch runs it: each query's rows from `scan_mask`, then one scan."""
    masks = [index.scan_mask(filters)[1] for _ in queries]
    index.search_many(queries, [10] * len(queries), masks)


def per_query_ms(run, queries, seconds: float) -> float:
    """Milliseconds per query of `run(queries)` repeated for about `seconds`."""
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        run(queries)
        done += len(queries)
    return 1000 * (time.perf_counter() - start) / done


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 2, 3, 4, 8, 16, 32])
    parser.add_argument(
        "--allowed", type=float, nargs="+", default=[1.0], help="fractions of rows a `since` filter allows"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    inf = float("inf")
    print(f"load {load_average()}; one thread; ms per query, median of {args.rounds} alternating rounds")
    print("| rows | allowed | batch | lone | batched | lone ÷ batched |\n|---|---|---|---|---|---|")
    for size, fraction in itertools.product(args.sizes, args.allowed):
        index = build(size)
        filters = None if fraction >= 1 else Filters(since_ms=int((1 - fraction) * size))
        for batch in args.batches:
            queries = latent(batch, index.dims, seed=2)
            ks = [10] * batch
            masks = [index.scan_mask(filters)[1] for _ in ks]
            for query, got in zip(queries, index.search_many(queries, ks, masks), strict=True):
                assert got.row_ids.tolist() == index.search(query, 10, filters, inf).row_ids.tolist()
            lone, batched = [], []
            for _ in range(args.rounds):
                lone.append(
                    per_query_ms(functools.partial(search_each, index, filters), queries, args.seconds)
                )
                batched.append(
                    per_query_ms(functools.partial(search_all, index, filters), queries, args.seconds)
                )
            a, b = statistics.median(lone), statistics.median(batched)
            print(f"| {size:,} | {fraction:.0%} | {batch} | {a:.3f} | {b:.3f} | {a / b:.2f} |", flush=True)


if __name__ == "__main__":
    main()
