"""One `put_memories` batch reads what it needs up front and writes without waiting for each answer
(engram/store/write_batch.py; pipelined on PostgreSQL). A memory later in the batch must still see what an
earlier one wrote, exactly as statement-by-statement reads did. Both backends (the `backend` fixture)."""

import pytest
from support.models import STORE_MODEL as MODEL

from engram.errors import InvalidInput
from engram.store import MemoryWrite
from engram.store.index_source import read_delta
from engram.store.memory_reads import get_memory, space_status
from engram.store.memory_writes import put_memories
from engram.store.repo import MEMORY_COLLECTION, record_cid
from engram.store.spaces import get_space

ALICE, BOB = "did:plc:alice", "did:plc:bob"
RKEY = "3jzfcijpj2z2a"
AT = "2026-01-01T00:00:00.000Z"


async def test_a_memory_written_twice_in_one_batch_keeps_its_last_version(store, space, make_embedding):
    first = MemoryWrite(ALICE, "v1", rkey=RKEY, tags=["a"], embedding=make_embedding(1))
    second = MemoryWrite(ALICE, "v2", rkey=RKEY, tags=["b"], embedding=make_embedding(2))
    records = await store.write(put_memories, space, [first, second])
    assert [r.status for r in records] == ["created", "updated"]
    assert records[0].row_id == records[1].row_id  # both name the row that stays
    memory = await store.read(get_memory, space, records[1].uri)
    assert (memory.text, memory.tags, memory.row_id) == ("v2", ("b",), records[1].row_id)
    delta = await store.read(read_delta, space, MODEL.key, 0, 0)
    assert delta.added.row_ids.tolist() == [records[1].row_id]
    status = await store.read(space_status, space)
    assert status.memories == 1
    # The first version's row left a tombstone at this batch's generation, as an update across batches does.
    since_before = await store.read(
        read_delta, space, MODEL.key, records[1].row_id, status.space.generation - 1
    )
    assert len(since_before.deleted) == 1 and since_before.deleted[0] < records[1].row_id


async def test_identical_rewrite_later_in_the_batch_is_unchanged(store, space, make_embedding):
    # createdAt given: left out, each copy would be stamped with its own "now" and differ.
    item = MemoryWrite(ALICE, "same", rkey=RKEY, created_at=AT, embedding=make_embedding(1))
    records = await store.write(put_memories, space, [item, item])
    assert [r.status for r in records] == ["created", "unchanged"]
    assert records[0].row_id == records[1].row_id


async def test_an_idempotency_key_seen_earlier_in_the_batch_names_the_same_memory(store, space):
    items = [
        MemoryWrite(ALICE, "one", idempotency_key="f:1"),
        MemoryWrite(ALICE, "one again", idempotency_key="f:1"),
        MemoryWrite(ALICE, "two", idempotency_key="f:2"),
    ]
    records = await store.write(put_memories, space, items)
    assert records[0].rkey == records[1].rkey != records[2].rkey
    assert [r.status for r in records] == ["created", "updated", "created"]
    with pytest.raises(InvalidInput) as raised:
        await store.write(
            put_memories,
            space,
            [
                MemoryWrite(ALICE, "three", idempotency_key="f:3"),
                MemoryWrite(BOB, "x", idempotency_key="f:3"),
            ],
        )
    assert raised.value.name == "IdempotencyConflict"
    assert (await store.read(space_status, space)).memories == 2  # the failed batch wrote nothing


async def test_an_rkey_taken_earlier_in_the_batch_by_another_author_fails_the_batch(store, space):
    with pytest.raises(InvalidInput) as raised:
        await store.write(
            put_memories, space, [MemoryWrite(ALICE, "mine", rkey=RKEY), MemoryWrite(BOB, "also", rkey=RKEY)]
        )
    assert raised.value.name == "RkeyTaken"
    assert (await store.read(space_status, space)).memories == 0
    [record] = await store.write(put_memories, space, [MemoryWrite(BOB, "now mine", rkey=RKEY)])
    assert record.status == "created"


async def test_a_hosted_batch_leaves_one_repo_record_per_rkey_with_the_last_cid(store, space):
    records = await store.write(
        put_memories,
        space,
        [
            MemoryWrite(ALICE, "v1", rkey=RKEY),
            MemoryWrite(ALICE, "v2", rkey=RKEY),
            MemoryWrite(ALICE, "other"),
        ],
    )

    def cids(conn):
        sid = get_space(conn, space).id
        return [record_cid(conn, sid, MEMORY_COLLECTION, r.rkey) for r in records]

    assert await store.read(cids) == [records[1].cid, records[1].cid, records[2].cid]
