import time

import numpy as np
import pytest

from engram.errors import InvalidInput
from engram.search.rows import IndexSource
from engram.store import MemoryWrite, ModelSpec
from engram.store.index_source import StoreIndexSource
from engram.store.memory_writes import delete_memory, put_memories
from engram.store.spaces import create_space, delete_space, set_config

ALICE, BOB = "did:plc:alice", "did:plc:bob"


async def test_full_load_then_deltas(store, space, model, make_embedding):
    source: IndexSource = StoreIndexSource(store)
    other = ModelSpec("other", "x", 8)
    records = await store.write(
        put_memories,
        space,
        [
            MemoryWrite(
                ALICE,
                "a",
                tags=["t1", "t2"],
                created_at="2026-01-01T00:00:00.001Z",
                embedding=make_embedding(1),
            ),
            MemoryWrite(BOB, "b", created_at="2026-01-01T00:00:00.002Z", embedding=make_embedding(2)),
            MemoryWrite(BOB, "not indexed", embedding=make_embedding(3, other)),
            MemoryWrite(BOB, "no vector"),
        ],
    )
    full = await source.delta(space, model.key, 0, 0)
    assert full.generation == await source.generation(space)
    assert full.added.row_ids.tolist() == [records[0].row_id, records[1].row_id]
    assert full.added.vectors.dtype == np.float16 and full.added.vectors.shape == (2, 8)
    assert np.array_equal(full.added.vectors[0], make_embedding(1).vector.astype(np.float16))
    assert full.added.authors == [ALICE, BOB]
    assert full.added.created_at.tolist() == [1767225600001, 1767225600002]
    assert full.added.tags == [("t1", "t2"), ()]
    assert full.deleted.tolist() == []
    high_water, seen_generation = int(full.added.row_ids[-1]), full.generation

    # update = delete + add, delete -> tombstone; each committed batch bumps the generation once
    [updated] = await store.write(
        put_memories, space, [MemoryWrite(ALICE, "a2", rkey=records[0].rkey, embedding=make_embedding(4))]
    )
    assert await store.write(delete_memory, space, BOB, records[1].rkey)
    delta = await source.delta(space, model.key, high_water, seen_generation)
    assert delta.generation == seen_generation + 2
    assert delta.added.row_ids.tolist() == [updated.row_id]
    assert sorted(delta.deleted.tolist()) == [records[0].row_id, records[1].row_id]
    # nothing new since the latest generation
    empty = await source.delta(space, model.key, int(delta.added.row_ids[-1]), delta.generation)
    assert (len(empty.added), empty.deleted.size, empty.added.vectors.shape) == (0, 0, (0, 8))
    # the other model's rows form their own slot
    assert (await source.delta(space, other.key, 0, 0)).added.row_ids.tolist() == [records[2].row_id]


async def test_next_embedding_rows_load_under_the_next_model_key(store, space, model, make_embedding):
    nxt = ModelSpec("next-model", "y", 4)
    await store.write(set_config, space, model, next=nxt)
    [record] = await store.write(
        put_memories,
        space,
        [MemoryWrite(ALICE, "both", embedding=make_embedding(1), next_embedding=make_embedding(2, nxt))],
    )
    building = await StoreIndexSource(store).delta(space, nxt.key, 0, 0)
    assert building.added.row_ids.tolist() == [record.row_id]
    assert np.array_equal(building.added.vectors[0], make_embedding(2, nxt).vector.astype(np.float16))


async def test_unknown_or_deleted_space(store, space, model):
    source = StoreIndexSource(store)
    await store.write(delete_space, space)
    for call in (
        source.generation(space),
        source.delta(space, model.key, 0, 0),
        source.generation(space + "nope"),
    ):
        with pytest.raises(InvalidInput) as info:
            await call
        assert info.value.name == "UnknownSpace"


async def test_full_load_of_100k_rows_is_fast(store, capsys):
    """100k x 384 f16 (20k on PostgreSQL): the load must not be the slow part of a cold start (the rate is printed)."""
    # PostgreSQL: 20k rows (seeding 100k through the server costs ~15 s of suite time); the rate is per row.
    n = 100_000 if store.backend == "sqlite" else 20_000
    uri, dims = "at://did:plc:authority1/space/garden.engram.space/big", 384
    spec = ModelSpec("m", "d", dims)
    await store.write(create_space, uri, "hosted")
    await store.write(set_config, uri, spec)
    vectors = np.random.default_rng(0).standard_normal((n, dims)).astype(np.float16)

    def bulk_insert(conn):  # seeding through put_memories would dominate the test's runtime
        space_id = conn.execute("SELECT id FROM spaces WHERE uri = ?", (uri,)).fetchone()[0]
        conn.executemany(
            "INSERT INTO memories (space_id, author, rkey, uri, cid, text, tags, created_at, created_ms,"
            " indexed_at, vector, model_key) VALUES (?, ?, ?, ?, 'c', 't', ?, 'x', ?, 'x', ?, ?)",
            (
                (
                    space_id,
                    f"did:plc:a{i % 7}",
                    f"r{i}",
                    f"{uri}/{i}",
                    '["tag"]' if i % 10 == 0 else "[]",
                    i,
                    vectors[i].tobytes(),
                    spec.key,
                )
                for i in range(n)
            ),
        )
        conn.execute("UPDATE spaces SET generation = generation + 1 WHERE id = ?", (space_id,))

    await store.write(bulk_insert)
    # CPU time of the whole process (the load runs on a reader thread), not wall-clock time: on a busy
    # machine the wall clock measures the neighbours, the CPU time measures the load.
    started = time.process_time()
    delta = await StoreIndexSource(store).delta(uri, spec.key, 0, 0)
    elapsed = time.process_time() - started
    assert len(delta.added) == n and np.array_equal(delta.added.vectors, vectors)
    assert delta.added.tags[0] == ("tag",) and delta.added.tags[1] == ()
    assert np.all(np.diff(delta.added.row_ids) > 0)
    with capsys.disabled():
        print(
            f"\n[store] full index load ({store.backend}): {n} x {dims} in {elapsed:.3f} CPU s = {n / elapsed:,.0f} rows/s"
        )
    assert elapsed < 5.0


async def test_pruned_tombstones_make_older_deltas_unavailable(store, space, model, make_embedding):
    from engram.search.rows import DeltaUnavailable

    source = StoreIndexSource(store)
    records = await store.write(
        put_memories, space, [MemoryWrite(ALICE, f"m{i}", embedding=make_embedding(i)) for i in range(3)]
    )
    before = await source.generation(space)
    await store.write(delete_memory, space, ALICE, records[0].rkey)
    after = await source.generation(space)
    assert (await source.delta(space, model.key, 0, before)).deleted.tolist() == [records[0].row_id]
    assert await source.prune_tombstones(space, after) == 1
    assert (await source.delta(space, model.key, 0, after)).deleted.tolist() == []  # caught up: fine
    assert len((await source.delta(space, model.key, 0, 0)).added) == 2  # a full build never needs them
    with pytest.raises(DeltaUnavailable):
        await source.delta(space, model.key, 0, before)  # would miss the pruned deletion
