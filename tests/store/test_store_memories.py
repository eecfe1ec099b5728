import pytest

from engram.errors import InvalidInput
from engram.store import MemoryWrite, ModelSpec
from engram.store.memory_reads import (
    decode_cursor,
    find_import_key,
    get_memories,
    get_memory,
    iter_export,
    list_memories,
    space_status,
)
from engram.store.memory_writes import delete_memories, delete_memory, put_memories
from engram.store.spaces import create_space, delete_space, get_space, list_spaces, set_config

ALICE, BOB = "did:plc:alice", "did:plc:bob"


def at(minute: int) -> str:
    return f"2026-01-01T00:{minute:02d}:00.000Z"


async def test_put_then_get_round_trip(store, space, make_embedding):
    [record] = await store.write(
        put_memories,
        space,
        [
            MemoryWrite(
                ALICE,
                "the build uses uv",
                tags=["build", "python"],
                source="notes.md",
                created_at=at(1),
                attrs={"document_id": "doc1", "chunk": 0},
                embedding=make_embedding(1),
            )
        ],
    )
    assert record.status == "created" and record.indexed
    assert record.uri == f"{space}/{ALICE}/garden.engram.memory/{record.rkey}"
    memory = await store.read(get_memory, space, record.uri)
    assert (memory.text, memory.tags, memory.source, memory.attrs) == (
        "the build uses uv",
        ("build", "python"),
        "notes.md",
        {"document_id": "doc1", "chunk": 0},
    )
    assert (memory.cid, memory.row_id, memory.author, memory.created_at) == (
        record.cid,
        record.row_id,
        ALICE,
        at(1),
    )
    assert await store.read(get_memory, space, record.uri + "x") is None
    assert [m.uri for m in await store.read(get_memories, space, [record.row_id, 999])] == [record.uri]


async def test_update_replaces_row_and_identical_put_is_unchanged(store, space, make_embedding):
    item = MemoryWrite(ALICE, "v1", rkey="3jzfcijpj2z2a", created_at=at(1), embedding=make_embedding(1))
    [first] = await store.write(put_memories, space, [item])
    generation = (await store.read(get_space, space)).generation
    [same] = await store.write(put_memories, space, [item])
    assert (same.status, same.row_id, same.cid) == ("unchanged", first.row_id, first.cid)
    assert (await store.read(get_space, space)).generation == generation  # a no-op batch bumps nothing
    item.text = "v2"
    [second] = await store.write(put_memories, space, [item])
    assert second.status == "updated" and second.row_id > first.row_id and second.cid != first.cid
    assert second.uri == first.uri
    memories, _ = await store.read(list_memories, space)
    assert [(m.row_id, m.text) for m in memories] == [(second.row_id, "v2")]


async def test_attrs_change_alone_is_an_update(store, space):
    item = MemoryWrite(ALICE, "x", rkey="3jzfcijpj2z2a", created_at=at(1), attrs={"role": "user"})
    [first] = await store.write(put_memories, space, [item])
    item.attrs = {"role": "assistant"}
    [second] = await store.write(put_memories, space, [item])
    assert second.status == "updated" and second.cid == first.cid and second.row_id != first.row_id


async def test_idempotency_keys_make_reimport_a_no_op(store, space):
    items = [
        MemoryWrite(ALICE, f"line {i}", created_at=at(i), idempotency_key=f"file.jsonl:{i}") for i in range(3)
    ]
    first = await store.write(put_memories, space, items)
    again = await store.write(
        put_memories,
        space,
        [
            MemoryWrite(ALICE, f"line {i}", created_at=at(i), idempotency_key=f"file.jsonl:{i}")
            for i in range(3)
        ],
    )
    assert [r.rkey for r in again] == [r.rkey for r in first]
    assert {r.status for r in again} == {"unchanged"}
    assert (await store.read(space_status, space)).memories == 3
    assert await store.read(find_import_key, space, "file.jsonl:1") == (ALICE, first[1].rkey)
    with pytest.raises(InvalidInput) as info:
        await store.write(put_memories, space, [MemoryWrite(BOB, "x", idempotency_key="file.jsonl:0")])
    assert info.value.name == "IdempotencyConflict"


async def test_a_bad_item_fails_the_whole_batch(store, space):
    with pytest.raises(InvalidInput, match=r"memories\[1\]: author"):
        await store.write(put_memories, space, [MemoryWrite(ALICE, "ok"), MemoryWrite("bob", "bad")])
    assert (await store.read(space_status, space)).memories == 0


async def test_unknown_and_deleted_spaces_are_refused(store, space):
    for fn, args in ((put_memories, ([MemoryWrite(ALICE, "x")],)), (delete_memory, (ALICE, "3jzfcijpj2z2a"))):
        with pytest.raises(InvalidInput) as info:
            await store.write(fn, space + "x", *args)
        assert info.value.name == "UnknownSpace"
    assert await store.write(delete_space, space) is True
    with pytest.raises(InvalidInput) as info:
        await store.read(list_memories, space)
    assert info.value.name == "UnknownSpace"


async def test_list_is_newest_first_with_a_working_cursor(store, space):
    items = [MemoryWrite(ALICE if i % 2 else BOB, f"m{i}", created_at=at(i % 5)) for i in range(12)]
    records = await store.write(put_memories, space, items)
    by_row = {r.row_id: i for i, r in enumerate(records)}
    expected = sorted(records, key=lambda r: (items[by_row[r.row_id]].created_at, r.row_id), reverse=True)
    seen, cursor = [], None
    while True:
        page, cursor = await store.read(list_memories, space, limit=5, cursor=cursor)
        seen += [m.row_id for m in page]
        if cursor is None:
            break
    assert seen == [r.row_id for r in expected]
    with pytest.raises(InvalidInput, match="bad cursor"):
        await store.read(list_memories, space, cursor="!!not-base64")
    with pytest.raises(InvalidInput, match="bad cursor"):
        decode_cursor("bm9wZQ")  # base64 of "nope"


async def test_list_filters_author_all_tags_since_and_attrs(store, space):
    await store.write(
        put_memories,
        space,
        [
            MemoryWrite(ALICE, "a", tags=["x", "y"], created_at=at(1), attrs={"document_id": "d1"}),
            MemoryWrite(ALICE, "b", tags=["x"], created_at=at(2), attrs={"document_id": "d2"}),
            MemoryWrite(BOB, "c", tags=["x", "y", "z"], created_at=at(3), attrs={"document_id": "d1"}),
            MemoryWrite(BOB, "d", created_at=at(4)),
        ],
    )

    async def texts(**filters):
        page, _ = await store.read(list_memories, space, **filters)
        return [m.text for m in page]

    assert await texts(author=ALICE) == ["b", "a"]
    assert await texts(tags=["x", "y"]) == ["c", "a"]
    assert await texts(tags=["y", "x", "y"]) == ["c", "a"]
    assert await texts(tags=["x"], author=BOB) == ["c"]
    assert await texts(tags=["nope"]) == []
    assert await texts(since=at(2)) == ["d", "c", "b"]  # inclusive
    assert await texts(since="2026-01-01T01:02:00+01:00") == ["d", "c", "b"]  # same instant, other zone
    assert await texts(attrs={"document_id": "d1"}) == ["c", "a"]
    with pytest.raises(InvalidInput, match="since"):
        await texts(since="yesterday")
    with pytest.raises(InvalidInput, match="attrs"):
        await texts(attrs={"x') OR 1=1 --": "y"})


async def test_skipped_accounting_and_recompute_on_model_change(store, space, model, make_embedding):
    other = ModelSpec("nomic-embed-text", "sha256:def", 8)
    await store.write(
        put_memories,
        space,
        [
            MemoryWrite(ALICE, "ok", embedding=make_embedding(1)),
            MemoryWrite(ALICE, "other model", embedding=make_embedding(2, other)),
            MemoryWrite(BOB, "other model", embedding=make_embedding(3, other)),
            MemoryWrite(BOB, "no vector"),
            MemoryWrite(BOB, "ok", embedding=make_embedding(4)),
        ],
    )
    status = await store.read(space_status, space)
    assert (status.memories, status.skipped) == (5, [(ALICE, 1), (BOB, 2)])
    assert status.skipped_reasons == {"model_mismatch": 2, "no_embedding": 1}
    # start a model change: the next model's vectors count as "building", skipped is still vs. active
    await store.write(set_config, space, model, next=other)
    status = await store.read(space_status, space)
    assert (status.building_memories, status.skipped) == (2, [(ALICE, 1), (BOB, 2)])
    # promote: the stored vectors are re-judged without re-fetching anything
    await store.write(set_config, space, other)
    status = await store.read(space_status, space)
    assert status.skipped == [(ALICE, 1), (BOB, 2)]
    assert status.skipped_reasons == {"model_mismatch": 2, "no_embedding": 1}
    # deleting a skipped memory removes it from the count
    page, _ = await store.read(list_memories, space, author=BOB)
    no_vector = next(m for m in page if m.text == "no vector")
    assert await store.write(delete_memory, space, BOB, no_vector.rkey) is True
    assert (await store.read(space_status, space)).skipped == [(ALICE, 1), (BOB, 1)]


async def test_space_without_config_skips_everything_until_configured(store, model, make_embedding):
    uri = "at://did:plc:authority1/space/garden.engram.space/bare"
    await store.write(create_space, uri, "synced")
    [record] = await store.write(
        put_memories, uri, [MemoryWrite(ALICE, "early", embedding=make_embedding(1))]
    )
    assert not record.indexed
    assert (await store.read(space_status, uri)).skipped_reasons == {"no_model": 1}
    await store.write(set_config, uri, model)
    assert (await store.read(space_status, uri)).skipped == []


async def test_space_lifecycle(store, model):
    uri = "at://did:plc:authority1/space/garden.engram.space/life"
    created = await store.write(create_space, uri, "hosted")
    assert (created.authority, created.skey, created.kind, created.config) == (
        "did:plc:authority1",
        "life",
        "hosted",
        None,
    )
    with pytest.raises(InvalidInput) as info:
        await store.write(create_space, uri, "hosted")
    assert info.value.name == "SpaceExists"
    for bad_uri, bad_kind in (
        (uri + "/", "hosted"),
        ("at://alice/space/garden.engram.space/x", "hosted"),
        ("at://did:plc:a/space/other.type/x", "hosted"),
        (uri + "2", "mirror"),
    ):
        with pytest.raises(InvalidInput):
            await store.write(create_space, bad_uri, bad_kind)
    configured = await store.write(
        set_config, uri, model, document_prefix="search_document: ", query_prefix="search_query: "
    )
    assert configured.config.active == model and configured.config.query_prefix == "search_query: "
    assert configured.config.record["modelDigest"] == model.digest
    with pytest.raises(InvalidInput, match="dims"):
        await store.write(set_config, uri, ModelSpec("m", "d", 0))
    await store.write(put_memories, uri, [MemoryWrite(ALICE, "x")])
    assert await store.write(delete_space, uri) is True
    assert await store.write(delete_space, uri) is False
    gone = await store.read(get_space, uri)
    assert gone.deleted and gone.generation > configured.generation
    assert uri not in [s.uri for s in await store.read(list_spaces)]
    assert uri in [s.uri for s in await store.read(list_spaces, True)]
    revived = await store.write(create_space, uri, "hosted")
    assert not revived.deleted and revived.id == created.id and revived.generation > gone.generation
    assert revived.config is None and (await store.read(space_status, uri)).memories == 0


async def test_delete_memories_batch(store, space):
    records = await store.write(put_memories, space, [MemoryWrite(ALICE, str(i)) for i in range(4)])
    keys = [(ALICE, r.rkey) for r in records[:2]] + [(BOB, records[3].rkey)]
    assert await store.write(delete_memories, space, keys) == 2
    assert (await store.read(space_status, space)).memories == 2


async def test_export_iterates_everything_with_vectors(store, space, make_embedding):
    records = await store.write(
        put_memories,
        space,
        [MemoryWrite(ALICE, str(i), embedding=make_embedding(i) if i % 3 else None) for i in range(25)],
    )
    batches = [batch async for batch in iter_export(store, space, batch_size=10)]
    assert [len(b) for b in batches] == [10, 10, 5]
    exported = [m for batch in batches for m in batch]
    assert [m.row_id for m in exported] == [r.row_id for r in records]
    assert all((m.vector is not None) == bool(i % 3) for i, m in enumerate(exported))
    assert exported[1].vector == make_embedding(1).vector.astype("<f2").tobytes()


async def test_promoting_the_next_model_counts_next_vectors_as_indexed(store, space, model, make_embedding):
    nxt = ModelSpec("next-model", "sha256:n", 8)
    await store.write(set_config, space, model, next=nxt)
    [both] = await store.write(
        put_memories,
        space,
        [MemoryWrite(ALICE, "both", embedding=make_embedding(1), next_embedding=make_embedding(2, nxt))],
    )
    [old_only] = await store.write(
        put_memories, space, [MemoryWrite(BOB, "old", embedding=make_embedding(3))]
    )
    assert both.indexed and old_only.indexed
    await store.write(set_config, space, nxt)  # promote
    status = await store.read(space_status, space)
    assert status.skipped == [(BOB, 1)] and status.skipped_reasons == {"model_mismatch": 1}
    [again] = await store.write(
        put_memories,
        space,
        [
            MemoryWrite(
                ALICE,
                "both",
                rkey=both.rkey,
                created_at=(await store.read(get_memory, space, both.uri)).created_at,
                embedding=make_embedding(1),
                next_embedding=make_embedding(2, nxt),
            )
        ],
    )
    assert again.status == "unchanged" and again.indexed


async def test_setting_the_same_config_again_is_a_no_op(store, space, model):
    before = await store.read(get_space, space)
    after = await store.write(set_config, space, model)
    assert after.generation == before.generation and after.config == before.config
    changed = await store.write(set_config, space, model, query_prefix="q: ")
    assert changed.generation == before.generation + 1


async def test_get_memories_keeps_the_callers_order_across_chunks(store, space):
    records = await store.write(put_memories, space, [MemoryWrite(ALICE, str(i)) for i in range(700)])
    wanted = [r.row_id for r in reversed(records)] + [10**9]
    found = await store.read(get_memories, space, wanted)
    assert [m.row_id for m in found] == wanted[:-1]
    assert await store.read(get_memories, space, []) == []


@pytest.mark.parametrize(
    "created_at",
    [
        "2026-11-01T10:00Z",
        "2026-11-01T10:00:00-00:00",
        "2026-11-01T10:00:00+0530",
        "2026-11-01T10Z",
        "20261101T100000Z",
        "2016-12-31T23:59:60Z",
        "2026-02-30T10:00:00Z",
        "2026-11-01t10:00:00z",
    ],
)
async def test_a_createdat_outside_the_lexicons_datetime_is_refused_and_writes_nothing(
    store, space, created_at
):
    """Python's fromisoformat reads these; the lexicons' datetime format (what every answer is checked
    against) does not, so storing one made every listing of the space a 500."""
    from engram.identifiers import check_datetime

    assert check_datetime(created_at) is not None
    with pytest.raises(InvalidInput, match="createdAt"):
        await store.write(put_memories, space, [MemoryWrite(ALICE, "odd date", created_at=created_at)])
    assert (await store.read(list_memories, space, limit=10))[0] == []
    accepted = "2026-11-01T10:00:00.123456789+05:30"
    [record] = await store.write(put_memories, space, [MemoryWrite(ALICE, "fine date", created_at=accepted)])
    assert record.status == "created" and check_datetime(accepted) is None
