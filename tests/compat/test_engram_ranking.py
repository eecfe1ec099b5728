"""Engram-chosen rankings (engram/service/ranking.py) through the real app: newer restatements before the
statements they replace (detected, or named by `attrs.supersedes`), marked and never dropped; the modes;
the confidence; and GPTBots' mixed embedding_rate using it while searchMemories-like paths do not."""

from __future__ import annotations

import pytest
from support.compat import bearer, start

from engram.errors import InvalidInput
from engram.service.hybrid import Scope, TextSearch

OLD = "Staging runs Postgres 15.4 on pg-staging-01."
NEW = "Staging now runs Postgres 16.2 on pg-staging-01 after the upgrade."
QUESTION = "Which Postgres does staging run on pg-staging-01"


@pytest.fixture
async def restated(aiohttp_client, settings):
    engram = await start(aiohttp_client, settings)
    space = await engram.space("restated")
    await engram.write(space.uri, [OLD], created_at="2026-01-01T00:00:00Z")
    await engram.write(space.uri, [NEW], created_at="2026-05-01T00:00:00Z")
    await engram.write(space.uri, ["Dana likes oat milk in her coffee."], created_at="2026-02-01T00:00:00Z")
    return engram, await engram.ctx.services.spaces.require(space.uri)


async def test_newer_restatement_comes_first_and_the_older_is_marked_not_dropped(restated):
    engram, space = restated
    plain = await engram.ctx.services.hybrid.run([Scope(space)], TextSearch(QUESTION, weight=0.7))
    assert plain[0].memory.text == OLD  # fused relevance alone prefers the older wording
    ranking = await engram.ctx.services.ranking.run([Scope(space)], TextSearch(QUESTION), "hybrid")
    texts = [h.memory.text for h in ranking.hits]
    assert texts[:2] == [NEW, OLD]
    assert (
        ranking.hits[1].superseded_by == ranking.hits[0].memory.uri and ranking.hits[0].superseded_by is None
    )
    assert ranking.confidence >= 0.5


async def test_explicit_supersedes_attribute_and_modes(aiohttp_client, settings):
    engram = await start(aiohttp_client, settings)
    space = await engram.space("explicit")
    (old,) = await engram.write(
        space.uri, ["The on-call phone number is 555-0100."], created_at="2026-01-01T00:00:00Z"
    )
    await engram.write(space.uri, ["Call 555-0199 for on-call from June."], created_at="2026-06-01T00:00:00Z",
                       attrs={"supersedes": old.uri})  # fmt: skip
    space = await engram.ctx.services.spaces.require(space.uri)
    for mode in ("vector", "keyword", "hybrid"):
        ranking = await engram.ctx.services.ranking.run(
            [Scope(space)], TextSearch("on-call phone number"), mode
        )
        assert [h.memory.text for h in ranking.hits][:2] == [
            "Call 555-0199 for on-call from June.",
            "The on-call phone number is 555-0100.",
        ], mode
        assert ranking.hits[1].superseded_by == ranking.hits[0].memory.uri
    with pytest.raises(InvalidInput):
        await engram.ctx.services.ranking.run([Scope(space)], TextSearch("x"), "fuzzy")
    nothing = await engram.ctx.services.ranking.run(
        [Scope(space)], TextSearch("zebra giraffe quokka"), "hybrid"
    )
    assert nothing.confidence < 0.5


async def test_gptbots_puts_the_restatement_first_at_every_rate(restated):
    """One ranking pipeline behind every embedding_rate (engram/service/ranking.py), as MCP recall."""
    engram, space = restated
    token, _ = await engram.key(space.uri, scopes=("read",))

    async def contents(rate):
        resp = await engram.client.post(
            "/v1/vector/match",
            json={"prompt": QUESTION, "top_k": 3, "embedding_rate": rate},
            headers=bearer(token),
        )
        assert resp.status == 200
        return [item["content"] for item in (await resp.json())["list"]]

    assert (await contents(0.7))[:2] == [NEW, OLD]
    assert (await contents(0))[:2] == [NEW, OLD]  # keyword only
    assert (await contents(1))[:2] == [NEW, OLD]  # vector only


async def test_a_repeated_ranking_costs_no_store_read_and_annotates_on_the_loop(restated, monkeypatch):
    """The pool's memories come from the hit cache once a search has read them, and the explanations'
    keyword facts from the caught-up keyword index on the loop (ranking._read, KeywordIndexes.annotate):
    the same answer, field for field, without the two thread hops (docs/benchmarks.md)."""
    engram, space = restated
    ranking = engram.ctx.services.ranking
    query = TextSearch(QUESTION)
    first = await ranking.run([Scope(space)], query, "hybrid")
    store, pool = engram.ctx.store, ranking.hybrid.keywords.pool
    reads: list[str] = []
    runs: list[str] = []
    real_read, real_run = store.read, pool.run

    async def read(fn, *args, **kwargs):
        reads.append(fn.__qualname__)
        return await real_read(fn, *args, **kwargs)

    async def run(fn, *args, **kwargs):
        runs.append(fn.__name__)
        return await real_run(fn, *args, **kwargs)

    monkeypatch.setattr(store, "read", read)
    monkeypatch.setattr(pool, "run", run)
    again = await ranking.run([Scope(space)], query, "hybrid")
    assert again == first and again.hits[0].why is not None and again.hits[0].why.terms
    assert [r for r in reads if r.startswith("EngramRanking.")] == []  # (an index flush may read meanwhile)
    assert "search" in runs and "annotate" not in runs
    # a filter's mask is a pass over every row: that annotation runs in a worker, with the same answer
    tagged = await ranking.run([Scope(space)], TextSearch(QUESTION, since="2025-01-01T00:00:00Z"), "hybrid")
    assert "annotate" in runs
    assert [h.memory.uri for h in tagged.hits] == [h.memory.uri for h in first.hits]
    assert [h.why for h in tagged.hits] == [h.why for h in first.hits]
