"""The read path never writes the store: first builds, saves and catch-ups of an index commit nothing unless
there are tombstones to prune (then one prune commit follows the save that made them prunable)."""

import sqlite3

import numpy as np
import psycopg

from engram.config import SearchConfig
from engram.search.manager import IndexManager
from engram.store import MemoryWrite
from engram.store.index_source import StoreIndexSource
from engram.store.memory_writes import delete_memory, put_memories
from engram.workers import WorkerPool

ALICE = "did:plc:alice"


def data_version(store) -> int:
    """Changes when a write commits (and only then). SQLite: PRAGMA data_version, as seen by another
    connection. PostgreSQL: the next transaction id, which only a writing transaction consumes."""
    if store.backend == "postgres":
        with psycopg.connect(store.url, autocommit=True) as conn:
            return conn.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").fetchone()[0]
    return _watcher(store.path).execute("PRAGMA data_version").fetchone()[0]


_connections: dict[str, sqlite3.Connection] = {}


def _watcher(path) -> sqlite3.Connection:
    key = str(path)
    if key not in _connections:
        _connections[key] = sqlite3.connect(key)
    return _connections[key]


async def test_loading_and_saving_indexes_commits_nothing(store, space, model, make_embedding, tmp_path):
    records = await store.write(
        put_memories, space, [MemoryWrite(ALICE, f"m{i}", embedding=make_embedding(i)) for i in range(20)]
    )
    pool = WorkerPool(2, name="test-read-path")
    try:
        before = data_version(store)
        manager = IndexManager(StoreIndexSource(store), pool, tmp_path / "idx", SearchConfig.of())
        query = np.ones(model.dims, np.float32) / np.sqrt(model.dims)
        assert len((await manager.search(space, model.key, model.dims, query, 5)).row_ids) == 5
        await manager.flush()  # the first build was saved (and pruning considered)
        await manager.close()
        assert data_version(store) == before, "a first build or its save committed to the store"

        await store.write(delete_memory, space, ALICE, records[0].rkey)  # now there is a tombstone
        after_delete = data_version(store)
        manager = IndexManager(StoreIndexSource(store), pool, tmp_path / "idx", SearchConfig.of())
        found = await manager.search(space, model.key, model.dims, query, 25)
        assert records[0].row_id not in found.row_ids.tolist()
        await manager.close()  # saves past the deletion; the tombstone can go: one prune commit
        assert data_version(store) != after_delete
        assert await StoreIndexSource(store).prune_tombstones(space, 10**9) == 0  # already pruned
    finally:
        for connection in _connections.values():
            connection.close()
        _connections.clear()
        pool.close()
