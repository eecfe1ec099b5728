import pytest

from engram.store import MemoryWrite
from engram.store.keywords import fts_query, keyword_search
from engram.store.memories import delete_memory, prune_tombstones, put_memories
from engram.store.spaces import create_space, delete_space

ALICE, BOB = "did:plc:alice", "did:plc:bob"


@pytest.fixture
def backend() -> str:
    """The FTS5 table exists only in the SQLite schema (docs/scale-out.md: keyword ranking on both backends
    is the in-memory index's, tested in test_store_keyword_parity.py)."""
    return "sqlite"


def _fts_integrity(conn):
    # 'integrity-check' with rank 1 compares the index against the content table (memories)
    conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")


async def test_bm25_ranking_filters_and_index_consistency(store, space):
    records = await store.write(
        put_memories,
        space,
        [
            MemoryWrite(
                ALICE, "The deploy key lives in the vault", tags=["ops"], created_at="2026-01-01T00:00:00Z"
            ),
            MemoryWrite(
                ALICE,
                "Deploy on Fridays only with approval; deploy deploy",
                created_at="2026-01-02T00:00:00Z",
            ),
            MemoryWrite(
                BOB,
                "Café opening hours",
                source="https://example.com/deploy",
                created_at="2026-01-03T00:00:00Z",
            ),
            MemoryWrite(BOB, "unrelated", created_at="2026-01-04T00:00:00Z"),
        ],
    )
    hits = await store.read(keyword_search, space, "deploy")
    assert [row for row, _ in hits][:2] == [records[1].row_id, records[0].row_id]  # more occurrences first
    assert {row for row, _ in hits} == {r.row_id for r in records[:3]}  # source is searched too
    assert all(score > 0 for _, score in hits) and hits == sorted(hits, key=lambda h: -h[1])
    assert [r for r, _ in await store.read(keyword_search, space, "cafe")] == [
        records[2].row_id
    ]  # diacritics
    assert [r for r, _ in await store.read(keyword_search, space, "deploy", author=BOB)] == [
        records[2].row_id
    ]
    assert [r for r, _ in await store.read(keyword_search, space, "deploy", tags=["ops"])] == [
        records[0].row_id
    ]
    assert len(await store.read(keyword_search, space, "deploy", since="2026-01-02T00:00:00Z")) == 2
    # update and delete keep the external-content index exact
    await store.write(put_memories, space, [MemoryWrite(ALICE, "rotated", rkey=records[0].rkey)])
    await store.write(delete_memory, space, ALICE, records[1].rkey)
    assert [r for r, _ in await store.read(keyword_search, space, "deploy")] == [records[2].row_id]
    await store.write(_fts_integrity)


@pytest.mark.parametrize(
    "text", ['"', "NEAR(a b)", "a AND", "-x", "col:x", "*", "^", "(((", "' OR 1=1 --", ""]
)
async def test_any_text_is_a_valid_query(store, space, text):
    await store.write(put_memories, space, [MemoryWrite(ALICE, "a b x col 1")])
    await store.read(keyword_search, space, text)  # no FTS5 syntax error, whatever the input


def test_fts_query_quotes_distinct_words():
    assert fts_query('Deploy "the" deploy NEAR(x)') == '"deploy" OR "the" OR "near" OR "x"'
    assert fts_query("  ;; ") is None


async def test_keyword_search_never_crosses_spaces(store, space):
    other = "at://did:plc:authority1/space/garden.engram.space/other"
    await store.write(create_space, other, "hosted")
    await store.write(put_memories, other, [MemoryWrite(ALICE, "secret deploy notes")])
    assert await store.read(keyword_search, space, "deploy") == []  # never crosses spaces
    await store.write(delete_space, other)
    await store.write(_fts_integrity)


async def test_prune_tombstones(store, space):
    records = await store.write(put_memories, space, [MemoryWrite(ALICE, str(i)) for i in range(3)])
    for record in records:
        await store.write(delete_memory, space, ALICE, record.rkey)

    def tombstone_generations(conn):
        return [row[0] for row in conn.execute("SELECT generation FROM tombstones ORDER BY generation")]

    generations = await store.read(tombstone_generations)
    assert len(generations) == 3
    assert await store.write(prune_tombstones, space, generations[1]) == 2
    assert await store.read(tombstone_generations) == generations[2:]
