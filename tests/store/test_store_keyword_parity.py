"""Keyword (BM25) ranking is the same on both backends: the in-memory KeywordIndex is built and caught up
from `read_keyword_delta`, so the same writes give the same rows, scores and order on SQLite and
PostgreSQL (docs/scale-out.md#keyword-search)."""

from pathlib import Path

import orjson
import pytest

from engram.search.keyword_index import KeywordIndex
from engram.store import MemoryWrite, Store, database_path
from engram.store.index_source import read_keyword_delta
from engram.store.memory_writes import delete_memories, put_memories
from engram.store.postgres.store import PostgresStore
from engram.store.spaces import create_space

SPACE = "at://did:plc:authority1/space/garden.engram.space/words"
AUTHOR = "did:plc:alice"
EXAMPLES = Path(__file__).parents[2] / "examples" / "memories.jsonl"
QUERIES = ["package manager", "meetings before 10:00", "SRE on-call rotation", "deploy", "Dana prefers pnpm"]


@pytest.fixture
def backend() -> str:
    return "both"  # this module opens one store of each kind itself


def _corpus() -> list[MemoryWrite]:
    rows = [orjson.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()]
    return [MemoryWrite(AUTHOR, r["text"], tags=r.get("tags", []), source=r.get("source")) for r in rows]


async def _rankings(store: Store) -> list[list[tuple[str, float]]]:
    corpus = _corpus()
    await store.write(create_space, SPACE, "hosted")
    records = await store.write(put_memories, SPACE, corpus[:200])
    index = KeywordIndex()
    full = await store.read(read_keyword_delta, SPACE, 0, 0)
    index.add(full.added)
    # More writes, an update and deletions, then a catch-up through the delta as KeywordIndexes does.
    update = MemoryWrite(AUTHOR, "deploy deploy on Fridays", rkey=records[1].rkey)
    await store.write(put_memories, SPACE, [*corpus[200:], update])
    await store.write(delete_memories, SPACE, [(AUTHOR, records[2].rkey), (AUTHOR, records[150].rkey)])
    delta = await store.read(read_keyword_delta, SPACE, index.last_row_id, full.generation)
    index.remove(delta.deleted)
    index.add(delta.added)
    # Row ids and rkeys (fresh TIDs) differ between runs; a memory's text names it in both.
    text_of = dict(await store.read(lambda c: c.execute("SELECT row_id, text FROM memories").fetchall()))
    result = []
    for query in QUERIES:
        found = index.search(query, 10)
        result.append(
            [(text_of[r], round(float(s), 5)) for r, s in zip(found.row_ids, found.scores, strict=True)]
        )
    return result


async def test_keyword_ranking_is_identical_on_sqlite_and_postgres(tmp_path, pg_database_url):
    sqlite_store = await Store.open(database_path(tmp_path))
    postgres_store = await PostgresStore.open(pg_database_url)
    try:
        on_sqlite = await _rankings(sqlite_store)
        on_postgres = await _rankings(postgres_store)
    finally:
        await sqlite_store.close()
        await postgres_store.close()
    assert all(on_sqlite), "every query should match something in the example corpus"
    assert on_postgres == on_sqlite
    assert on_sqlite[3][0][0] == "deploy deploy on Fridays"  # the update is searchable after the catch-up
