"""Keyword and hybrid search in the service layer: fusion, pre-filters on both sides, scoped rows, and any
user text as a keyword query."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.compat import start

from engram.service.fusion import fuse
from engram.service.hybrid import Scope, TextSearch

ALICE, BOB = "did:plc:alice", "did:plc:bob"


def test_fusion_is_a_convex_mix_of_absolute_similarity_and_absolute_keyword_shares():
    sims = {1: 0.8, 2: 0.4, 3: -0.2}
    kws = {2: 0.6, 4: 0.3}  # shares of each query's attainable BM25 (engram/search/keyword_index.py)
    assert fuse(sims, kws, 1.0) == [(1, 0.8), (2, 0.4), (3, 0.0), (4, 0.0)]
    # not divided by the best candidate's: a weak keyword match stays weak
    assert fuse(sims, kws, 0.0) == [(2, 0.6), (4, 0.3), (1, 0.0), (3, 0.0)]
    mixed = dict(fuse(sims, kws, 0.5))
    assert mixed == pytest.approx({1: 0.4, 2: 0.5, 3: 0.0, 4: 0.15})
    assert fuse({5: 0.5, 4: 0.5}, {}, 1.0) == [(4, 0.5), (5, 0.5)]  # ties: lower row id first
    with pytest.raises(ValueError):
        fuse(sims, kws, 1.5)


@pytest.fixture
async def corpus(aiohttp_client, settings):
    from engram.store import MemoryWrite

    engram = await start(aiohttp_client, settings)
    space = await engram.space("hybrid")
    items = [
        MemoryWrite(
            author=ALICE,
            text="Rotate the deploy keys every quarter.",
            tags=("ops",),
            created_at="2026-01-01T00:00:00Z",
        ),
        MemoryWrite(
            author=BOB,
            text="The deploy pipeline runs on merge to main.",
            tags=("ops", "ci"),
            created_at="2026-02-01T00:00:00Z",
        ),
        MemoryWrite(
            author=BOB,
            text="Lunch on Thursday is at the ramen place.",
            source="deploy-notes.md",
            created_at="2026-03-01T00:00:00Z",
        ),
    ]
    records = await engram.ctx.services.memories.write(space.uri, items)
    return engram, await engram.ctx.services.spaces.require(space.uri), records


@pytest.mark.parametrize("weight", [0.0, 0.5, 1.0])
async def test_pre_filters_apply_to_keyword_vector_and_hybrid_alike(corpus, weight):
    engram, space, records = corpus
    run = engram.ctx.services.hybrid.run

    async def texts(**filters):
        hits = await run([Scope(space)], TextSearch("deploy", limit=10, weight=weight, **filters))
        return {h.memory.text for h in hits}

    assert await texts(author=ALICE) == {"Rotate the deploy keys every quarter."}
    assert await texts(tags=("ci",)) == {"The deploy pipeline runs on merge to main."}
    assert await texts(since="2026-02-15T00:00:00Z") <= {"Lunch on Thursday is at the ramen place."}
    scoped = await run([Scope(space, (records[2].row_id,))], TextSearch("deploy", limit=10, weight=weight))
    assert [h.memory.row_id for h in scoped] == [records[2].row_id]


async def test_keyword_search_covers_text_tags_and_source_and_reports_both_scores(corpus):
    engram, space, records = corpus
    hits = await engram.ctx.services.hybrid.run([Scope(space)], TextSearch("deploy", limit=10, weight=0.5))
    assert {h.memory.row_id for h in hits if h.keyword} == {r.row_id for r in records}  # source matched too
    assert all(h.similarity is not None and 0 <= h.score <= 1 for h in hits)
    ci = await engram.ctx.services.hybrid.run([Scope(space)], TextSearch("ci", limit=10, weight=0.0))
    assert [h.memory.row_id for h in ci] == [records[1].row_id]  # a tag


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.one_of(
        st.text(max_size=60),
        st.sampled_from(
            ['"', 'deploy"', "NEAR(a b)", "a OR", "-x", "*", "c:d", "^deploy", "(", "AND", "deploy*"]
        ),
    )
)
async def test_any_user_text_is_a_valid_keyword_query(corpus, text):
    engram, space, _ = corpus
    hits = await engram.ctx.services.hybrid.run([Scope(space)], TextSearch(text, limit=5, weight=0.0))
    assert all(0 <= h.score <= 1 for h in hits)


async def test_keyword_index_follows_updates_deletes_and_new_rows(corpus):
    from engram.store import MemoryWrite

    engram, space, records = corpus
    run = engram.ctx.services.hybrid.run

    async def keyword(text):
        current = await engram.ctx.services.spaces.require(space.uri)
        return {h.memory.text for h in await run([Scope(current)], TextSearch(text, limit=10, weight=0.0))}

    assert await keyword("ramen") == {"Lunch on Thursday is at the ramen place."}
    first = records[2]
    await engram.ctx.services.memories.write(
        space.uri,
        [
            MemoryWrite(
                author=first.author,
                rkey=first.rkey,
                text="Lunch on Thursday is at the taco place.",
                created_at="2026-03-01T00:00:00Z",
            )
        ],
    )  # an update: the old row goes, a new one comes
    assert await keyword("ramen") == set()
    assert await keyword("taco") == {"Lunch on Thursday is at the taco place."}
    await engram.ctx.services.memories.delete(space.uri, first.author, first.rkey)
    assert await keyword("taco") == set()
