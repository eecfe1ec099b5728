import asyncio
import sqlite3
import threading

import numpy as np
import psycopg
import pytest
from support.loop_guard import loop_guard

from engram.store import Embedding, MemoryWrite, ModelSpec, Store, database_path
from engram.store.memory_writes import put_memories
from engram.store.spaces import create_space, set_config


def _create_counter(conn):
    conn.execute("CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
    conn.execute("INSERT INTO counter (id, n) VALUES (1, 0) ON CONFLICT DO NOTHING")


def _increment(conn):
    # read-modify-write: only correct if writes are serialized
    n = conn.execute("SELECT n FROM counter WHERE id = 1").fetchone()[0]
    conn.execute("UPDATE counter SET n = ? WHERE id = 1", (n + 1,))
    return threading.current_thread().name


def _count(conn):
    return conn.execute("SELECT n FROM counter WHERE id = 1").fetchone()[0]


async def test_write_then_read_round_trip_and_acknowledged_writes_are_visible(store):
    await store.write(_create_counter)
    for expected in range(1, 6):
        await store.write(_increment)
        assert await store.read(_count) == expected  # a reader sees every acknowledged write at once


async def test_writes_run_on_one_thread_and_reads_elsewhere(store):
    await store.write(_create_counter)
    writers = {await store.write(_increment) for _ in range(5)}
    reader = await store.read(lambda conn: threading.current_thread().name)
    assert writers == {f"engram-{store.backend}-writer"}
    assert reader.startswith(f"engram-{store.backend}-reader") and reader != threading.current_thread().name


async def test_concurrent_writes_from_many_coroutines_serialize(store):
    await store.write(_create_counter)
    await asyncio.gather(*(store.write(_increment) for _ in range(200)))
    assert await store.read(_count) == 200


async def test_exception_rolls_back_and_propagates(store):
    await store.write(_create_counter)

    class Boom(Exception):
        pass

    def increment_then_fail(conn):
        _increment(conn)
        raise Boom("nope")

    with pytest.raises(Boom, match="nope"):
        await store.write(increment_then_fail)
    assert await store.read(_count) == 0
    await store.write(_increment)  # the writer thread survived the failure
    assert await store.read(_count) == 1


# The driver's own errors reach the caller unchanged on either backend.
SQL_ERRORS = (sqlite3.OperationalError, psycopg.errors.UndefinedTable, psycopg.errors.ReadOnlySqlTransaction)


async def test_sql_errors_propagate_and_readers_cannot_write(store):
    with pytest.raises(SQL_ERRORS):
        await store.write(lambda conn: conn.execute("SELECT * FROM no_such_table"))
    await store.write(_create_counter)
    with pytest.raises(SQL_ERRORS, match="readonly|read-only|query_only"):
        await store.read(_increment)
    assert await store.read(_count) == 0


async def test_read_sees_one_snapshot(store):
    await store.write(_create_counter)
    started, resume = threading.Event(), threading.Event()

    def read_twice(conn):
        first = _count(conn)
        started.set()
        resume.wait(5)
        return first, _count(conn)

    pending = asyncio.ensure_future(store.read(read_twice))
    await asyncio.to_thread(started.wait, 5)
    await store.write(_increment)  # commits between the reader's two SELECTs
    resume.set()
    assert await pending == (0, 0)
    assert await store.read(_count) == 1


async def test_close_finishes_queued_writes_then_refuses(tmp_path):
    store = await Store.open(database_path(tmp_path))
    await store.write(_create_counter)
    pending = [asyncio.ensure_future(store.write(_increment)) for _ in range(50)]
    await asyncio.sleep(0)  # let them all be queued before the sentinel
    await store.close()
    await asyncio.gather(*pending)
    with pytest.raises(RuntimeError, match="closed"):
        await store.write(_increment)
    with pytest.raises(RuntimeError, match="closed"):
        await store.read(_count)
    await store.close()  # closing twice is harmless
    reopened = await Store.open(database_path(tmp_path))
    try:
        assert await reopened.read(_count) == 50
    finally:
        await reopened.close()


async def test_event_loop_keeps_ticking_during_a_large_write(store):
    uri = "at://did:plc:authority1/space/garden.engram.space/big"
    spec = ModelSpec("m", "d", 384)
    await store.write(create_space, uri, "hosted")
    await store.write(set_config, uri, spec)
    # A round trip per statement makes PostgreSQL ~30x slower per row than in-process SQLite; 2000 rows
    # are still many loop beats long there.
    rows = 20000 if store.backend == "sqlite" else 2000
    vectors = np.random.default_rng(0).standard_normal((rows, 384)).astype(np.float16)
    items = [
        MemoryWrite(
            "did:plc:alice", f"memory {i}", tags=["t"], embedding=Embedding("m", "d", 384, vectors[i])
        )
        for i in range(len(vectors))
    ]
    # loop_guard (docs in it) checks the loop thread's own CPU time and the time it sat blocked between
    # beats, not wall-clock gaps: on a loaded machine the loop may wait for a CPU without anyone at fault.
    async with loop_guard(max_busy_s=0.1) as guard:
        records = await store.write(put_memories, uri, items)
    print(
        f"[store] {len(items)} memories written; loop: {guard.beats} beats, "
        f"worst busy {guard.max_busy_s * 1000:.0f} ms, blocked {guard.max_blocked_s * 1000:.0f} ms, "
        f"queued for a CPU {guard.max_queued_s * 1000:.0f} ms"
    )
    assert len(records) == rows and all(r.indexed for r in records)
    # the loop kept running during the write, not only before and after it
    assert guard.beats >= 3


async def test_a_write_cancelled_before_its_turn_is_not_applied(store):
    await store.write(_create_counter)
    gate = threading.Event()
    blocker = asyncio.ensure_future(store.write(lambda conn: gate.wait(5)))
    victim = asyncio.ensure_future(store.write(_increment))
    await asyncio.sleep(0.05)
    victim.cancel()
    await asyncio.sleep(0.05)  # let the cancellation reach the queued write before the writer is free
    gate.set()
    await blocker
    with pytest.raises(asyncio.CancelledError):
        await victim
    await store.write(_increment)
    assert await store.read(_count) == 1


async def test_two_stores_on_one_file_take_turns(tmp_path):
    """The CLI opens its own Store next to a running server: BEGIN IMMEDIATE + busy_timeout serialize them."""
    first, second = await Store.open(database_path(tmp_path)), await Store.open(database_path(tmp_path))
    try:
        await first.write(_create_counter)
        await asyncio.gather(*(s.write(_increment) for _ in range(50) for s in (first, second)))
        assert await first.read(_count) == await second.read(_count) == 100
    finally:
        await first.close()
        await second.close()
