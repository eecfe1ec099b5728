"""PostgreSQL write locks scoped to a space (docs/scale-out.md#durability-and-isolation): two stores on one
database stand for two processes or nodes. Writes of different spaces do not wait for each other; writes
of one space, and any write not scoped to a space, still take turns, so read-then-write stays safe."""

import asyncio
import threading

import numpy as np
import pytest
from support.postgres_locks import wait_for_lock_waiters

from engram.store import Embedding, MemoryWrite, ModelSpec
from engram.store.memory_reads import list_memories
from engram.store.memory_writes import delete_memories, put_memories
from engram.store.postgres.store import PostgresStore
from engram.store.spaces import create_space, require_space, set_config

MODEL = ModelSpec("all-MiniLM-L6-v2", "sha256:abc", 8)

SPACES = [f"at://did:plc:authority1/space/garden.engram.space/s{i}" for i in range(4)]


@pytest.fixture
async def two_stores(pg_database_url):
    first, second = await PostgresStore.open(pg_database_url), await PostgresStore.open(pg_database_url)
    try:
        for uri in SPACES:
            await first.write(create_space, uri, "hosted")
            await first.write(set_config, uri, MODEL)
        yield first, second
    finally:
        await first.close()
        await second.close()


def _mark(conn, space_uri, text):
    require_space(conn, space_uri)
    return put_memories(conn, space_uri, [MemoryWrite("did:plc:alice", text)])


async def test_writes_of_other_spaces_go_ahead_while_one_space_is_held(two_stores, pg_database_url):
    first, second = two_stores
    gate, held = threading.Event(), threading.Event()

    def hold(conn):
        _mark(conn, SPACES[0], "held")
        held.set()
        assert gate.wait(60)

    holder = asyncio.ensure_future(first.write_to(SPACES[0], hold))
    while not held.is_set():
        await asyncio.sleep(0.01)
    try:
        # Another space commits on the other store while the first store's transaction is still open...
        await asyncio.wait_for(second.write_to(SPACES[1], _mark, SPACES[1], "other space"), 60)
        # ...but the same space, and a write not scoped to a space, wait for it.
        same = asyncio.ensure_future(second.write_to(SPACES[0], _mark, SPACES[0], "same space"))
        await wait_for_lock_waiters(pg_database_url, 1)
        assert not same.done()
    finally:
        gate.set()
    await holder
    await same
    unscoped = await second.write(require_space, SPACES[0])  # takes the store-wide lock, now free
    assert unscoped.generation >= 2
    texts = sorted(m.text for m in (await first.read(list_memories, SPACES[0], limit=10))[0])
    assert texts == ["held", "same space"]


async def test_an_unscoped_write_waits_for_space_writes_and_they_wait_for_it(two_stores, pg_database_url):
    first, second = two_stores
    gate, held = threading.Event(), threading.Event()

    def hold(conn):
        held.set()
        assert gate.wait(60)

    holder = asyncio.ensure_future(first.write_to(SPACES[2], hold))
    while not held.is_set():
        await asyncio.sleep(0.01)
    try:
        unscoped = asyncio.ensure_future(second.write(lambda conn: "ran"))
        await wait_for_lock_waiters(pg_database_url, 1)
        assert not unscoped.done()
    finally:
        gate.set()
    await holder
    assert await unscoped == "ran"

    gate2, held2 = threading.Event(), threading.Event()

    def hold_all(conn):
        held2.set()
        assert gate2.wait(60)

    exclusive = asyncio.ensure_future(first.write(hold_all))
    while not held2.is_set():
        await asyncio.sleep(0.01)
    try:
        scoped = asyncio.ensure_future(second.write_to(SPACES[3], _mark, SPACES[3], "after"))
        await wait_for_lock_waiters(pg_database_url, 1)
        assert not scoped.done()
    finally:
        gate2.set()
    await exclusive
    assert (await scoped)[0].status == "created"


async def test_concurrent_writers_on_two_stores_lose_nothing(two_stores):
    """Both stores write, update and delete memories of the same four spaces at once (each store groups
    its queued writes): every acknowledged write is there, each space's generation counts exactly the
    batches that changed it, and every tombstone names a generation the space has passed."""
    first, second = two_stores
    rng = np.random.default_rng(7)

    def embedding(seed):
        v = np.random.default_rng(seed).standard_normal(MODEL.dims).astype(np.float32)
        return Embedding(MODEL.model, MODEL.digest, MODEL.dims, v)

    start = {uri: (await first.read(require_space, uri)).generation for uri in SPACES}
    writes = []
    for n in range(160):
        store = (first, second)[n % 2]
        uri = SPACES[int(rng.integers(len(SPACES)))]
        item = MemoryWrite("did:plc:alice", f"memory {n}", embedding=embedding(n), idempotency_key=f"k{n}")
        writes.append((store, uri, n, item))
    results = await asyncio.gather(
        *(store.write_to(uri, put_memories, uri, [item]) for store, uri, _, item in writes)
    )
    assert all(r[0].status == "created" for r in results)
    # Second round: update half of them again (a new text) from the other store, delete a quarter.
    updates, deletes = [], []
    for (store, uri, n, item), [record] in zip(writes, results, strict=True):
        other = second if store is first else first
        if n % 2 == 0:
            changed = MemoryWrite(
                item.author, f"memory {n} v2", embedding=embedding(n + 1000), idempotency_key=f"k{n}"
            )
            updates.append(other.write_to(uri, put_memories, uri, [changed]))
        elif n % 4 == 1:
            deletes.append(other.write_to(uri, delete_memories, uri, [(item.author, record.rkey)]))
    await asyncio.gather(*updates, *deletes)

    for uri in SPACES:
        mine = [(n, item) for _, u, n, item in writes if u == uri]
        expected = sorted(f"memory {n} v2" if n % 2 == 0 else f"memory {n}" for n, _ in mine if n % 4 != 1)
        page, _ = await first.read(list_memories, uri, limit=500)
        assert sorted(m.text for m in page) == expected
        space = await first.read(require_space, uri)
        batches = len(mine) + sum(1 for n, _ in mine if n % 2 == 0 or n % 4 == 1)
        assert space.generation == start[uri] + batches  # every batch changed the space exactly once
        tombstones = await first.read(
            lambda c, sid=space.id: c.execute(
                "SELECT generation FROM tombstones WHERE space_id = ?", (sid,)
            ).fetchall()
        )
        deleted_or_updated = sum(1 for n, _ in mine if n % 2 == 0 or n % 4 == 1)
        assert len(tombstones) == deleted_or_updated
        assert all(g <= space.generation for (g,) in tombstones)
        # no two batches committed as the same generation: each tombstone generation is distinct
        assert len({g for (g,) in tombstones}) == len(tombstones)


async def test_one_store_commits_other_spaces_while_a_space_is_held(pg_database_url):
    """One store has several writers (engram/store/postgres/store.py `WRITERS`): a space's writes all go to
    one of them, so a transaction held open on one space does not hold up another space's write from the
    same process, and a second write of the held space waits for it."""
    store = await PostgresStore.open(pg_database_url, writers=2)
    try:
        for uri in SPACES:
            await store.write(create_space, uri, "hosted")
            await store.write(set_config, uri, MODEL)
        by_writer: dict[int, list[str]] = {}
        for uri in SPACES:
            by_writer.setdefault(store._queues.index(store._queue_for(uri)), []).append(uri)
        assert len(by_writer) == 2, "the four spaces all hash to one writer: pick other names"
        held_space, other_space = by_writer[0][0], by_writer[1][0]
        gate, held = threading.Event(), threading.Event()

        def hold(conn):
            _mark(conn, held_space, "held")
            held.set()
            assert gate.wait(60)

        holder = asyncio.ensure_future(store.write_to(held_space, hold))
        while not held.is_set():
            await asyncio.sleep(0.01)
        try:
            await asyncio.wait_for(store.write_to(other_space, _mark, other_space, "other space"), 60)
            same = asyncio.ensure_future(store.write_to(held_space, _mark, held_space, "same space"))
            await asyncio.sleep(0.2)  # the same space's write queues behind the held one on its writer
            assert not same.done()
        finally:
            gate.set()
        await holder
        await same
        texts = {m.text for m in (await store.read(list_memories, held_space))[0]}
        assert texts == {"held", "same space"}
        assert [m.text for m in (await store.read(list_memories, other_space))[0]] == ["other space"]
    finally:
        await store.close()
