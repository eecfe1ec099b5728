"""SQLite vs PostgreSQL store, same run, same data (docs/scale-out.md#the-store-on-postgresql).

    python scripts/bench_store_backends.py --database-url postgresql://user@host:port/db [--rows 20000]

The database must be empty (or at least hold no space named below). Measured per backend:
- bulk write: put_memories in batches of 500 (384-dim vectors, one tag), memories/s;
- one-memory writes: p50 latency from `store.write` to its acknowledgement (after COMMIT);
- point read: p50 of the auth step's space lookup (`readers.statement(get_space)`) on the calling thread;
- full index load: `read_delta` of every row (what a cold index build reads), rows/s;
- keyword load: `read_keyword_delta` + KeywordIndex.add of every row (the in-memory BM25 index), rows/s.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from engram.search.keyword_index import KeywordIndex
from engram.store import Embedding, MemoryWrite, ModelSpec, Store, database_path
from engram.store.index_source import read_delta, read_keyword_delta
from engram.store.memory_writes import put_memories
from engram.store.postgres.store import PostgresStore
from engram.store.spaces import create_space, get_space, set_config

SPACE = "at://did:plc:bench/space/garden.engram.space/backends"
SPEC = ModelSpec("bench", "sha256:bench", 384)
WORDS = [
    "deploy",
    "vault",
    "friday",
    "approval",
    "cafe",
    "opening",
    "hours",
    "schedule",
    "sync",
    "budget",
    "review",
    "incident",
]


def _items(start: int, count: int, rng: np.random.Generator) -> list[MemoryWrite]:
    vectors = rng.standard_normal((count, SPEC.dims)).astype(np.float16)
    return [
        MemoryWrite(
            "did:plc:writer",
            " ".join(rng.choice(WORDS, 8)) + f" note {start + i}",
            tags=["bench"],
            embedding=Embedding(SPEC.model, SPEC.digest, SPEC.dims, vectors[i]),
        )
        for i in range(count)
    ]


def _point_reads(store: Store, count: int) -> list[float]:
    times = []
    for _ in range(count):
        t = time.perf_counter()
        store.readers.statement(get_space, SPACE)
        times.append(time.perf_counter() - t)
    return times


async def _measure(store: Store, rows: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    await store.write(create_space, SPACE, "hosted")
    await store.write(set_config, SPACE, SPEC)
    started = time.perf_counter()
    for start in range(0, rows, 500):
        await store.write(put_memories, SPACE, _items(start, min(500, rows - start), rng))
    bulk = rows / (time.perf_counter() - started)
    single = []
    for i in range(50):
        batch = _items(rows + i, 1, rng)
        t = time.perf_counter()
        await store.write(put_memories, SPACE, batch)
        single.append(time.perf_counter() - t)
    # Timed on a worker thread: on PostgreSQL a read on the loop's thread is what the store forbids.
    point = await asyncio.to_thread(_point_reads, store, 200)
    t = time.perf_counter()
    delta = await store.read(read_delta, SPACE, SPEC.key, 0, 0)
    load = len(delta.added) / (time.perf_counter() - t)
    t = time.perf_counter()
    words = await store.read(read_keyword_delta, SPACE, 0, 0)
    KeywordIndex().add(words.added)
    keyword = len(words.added) / (time.perf_counter() - t)
    return {
        "bulk write memories/s": bulk,
        "one-memory write p50 ms": statistics.median(single) * 1000,
        "point read p50 us": statistics.median(point) * 1e6,
        "full index load rows/s": load,
        "keyword load+build rows/s": keyword,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sqlite_store = await Store.open(database_path(tmp))
        try:
            on_sqlite = await _measure(sqlite_store, args.rows)
        finally:
            await sqlite_store.close()
    postgres_store = await PostgresStore.open(args.database_url)
    try:
        on_postgres = await _measure(postgres_store, args.rows)
    finally:
        await postgres_store.close()
    print(f"{'':28} {'sqlite':>12} {'postgres':>12} {'pg/sqlite':>10}  ({args.rows} rows)")
    for name, value in on_sqlite.items():
        print(f"{name:28} {value:12,.1f} {on_postgres[name]:12,.1f} {on_postgres[name] / value:10.2f}")


if __name__ == "__main__":
    asyncio.run(main())
