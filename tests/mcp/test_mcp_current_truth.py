"""MCP recall's filters (until, any/excluded tags, typed attrs predicates), supersession as data
(supersedes / supersededBy with their basis, `current`) and explanations (why, empty reasons), on the real
app over streamable HTTP (docs/mcp.md#recall, docs/internals.md#supersession)."""

from __future__ import annotations

from support.mcp import error_of, result_of

OLD = "The team's weekly sync is on Mondays at 10:00 in the big room."
NEW = "Weekly sync: now Thursdays, 15:00."
QUERY = "when is the weekly team sync held?"

NOTES = [
    ("Apollo launch checklist lives in the ops wiki.", ("ops",), {"team": "apollo", "priority": 3,
                                                                  "due": "2026-03-01T00:00:00Z"}),
    ("Apollo-2 retro notes: ship smaller batches.", ("ops", "retro"), {"team": "apollo-2", "priority": 1,
                                                                       "labels": ["retro", "q1"]}),
    ("Artemis budget review moved to April.", ("finance",), {"team": "artemis", "priority": 5,
                                                             "due": "2026-04-10T00:00:00Z"}),
    ("Gemini on-call rotation starts Monday.", ("ops", "oncall"), {"team": "gemini", "priority": 2}),
]  # fmt: skip


async def test_filters_narrow_recall_before_ranking(served):
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    for text, tags, attrs in NOTES:
        await served.write(notes, [text], tags=tags, attrs=attrs)
    q = "team notes launch budget retro rotation"

    async with served.client(token) as client:

        async def texts(**args) -> list[str]:
            found = result_of(await client.call_tool("recall", {"query": q, "limit": 10, **args}))
            return sorted(h["text"][:6] for h in found["results"])

        assert await texts() == ["Apollo", "Apollo", "Artemi", "Gemini"]
        assert await texts(where={"team": "apollo"}) == ["Apollo"]
        assert await texts(where={"team": {"prefix": "apo"}}) == ["Apollo", "Apollo"]
        assert await texts(where={"priority": {"gte": 2, "lte": 3}}) == ["Apollo", "Gemini"]
        assert await texts(where={"labels": {"in": ["q1", "q9"]}}) == ["Apollo"]
        assert await texts(where={"due": {"after": "2026-03-15T00:00:00Z"}}) == ["Artemi"]
        assert await texts(any_tags=["finance", "oncall"]) == ["Artemi", "Gemini"]
        assert await texts(exclude_tags=["ops"]) == ["Artemi"]
        assert await texts(tags=["ops"], exclude_tags=["retro"], where={"priority": {"gte": 2}}) == [
            "Apollo",
            "Gemini",
        ]
        assert await texts(until="2000-01-01T00:00:00Z") == []
        for mode in ("vector", "keyword"):  # the same filters on every path
            found = result_of(
                await client.call_tool("recall", {"query": q, "mode": mode, "where": {"team": "artemis"}})
            )
            assert [h["text"][:6] for h in found["results"]] == ["Artemi"], mode

        # Why a list is empty, per query.
        filtered = result_of(await client.call_tool("recall", {"query": q, "where": {"team": "nobody"}}))
        assert (filtered["results"], filtered["empty"], filtered["memories"], filtered["allowed"]) == (
            [], "filtered_out", 4, 0,
        )  # fmt: skip
        strict = result_of(
            await client.call_tool("recall", {"query": "quantum chromodynamics", "min_confidence": 1})
        )
        assert strict["results"] == [] and strict["empty"] == "below_threshold"
        bad = await client.call_tool("recall", {"query": q, "where": {"team": {"near": "x"}}})
        assert "InvalidFilter" in error_of(bad)
        bad = await client.call_tool("recall", {"query": q, "until": "yesterday"})
        assert "until" in error_of(bad)

    empty = await served.space("empty")
    token, _ = await served.key(empty)
    async with served.client(token) as client:
        found = result_of(await client.call_tool("recall", {"query": q}))
        assert found["results"] == [] and found["empty"] == "no_memories"


async def test_supersession_is_data_and_current_drops_the_old(served):
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    async with served.client(token) as client:
        old = result_of(await client.call_tool("remember", {"text": OLD, "tags": ["rooms"]}))
        new = result_of(await client.call_tool("remember", {"text": NEW, "supersedes": old["uri"]}))
        for mode in ("vector", "hybrid", "keyword"):
            found = result_of(await client.call_tool("recall", {"query": QUERY, "mode": mode}))
            first, second = found["results"][:2]
            assert (first["uri"], second["uri"]) == (new["uri"], old["uri"]), mode
            assert first["supersedes"] == [{"uri": old["uri"], "basis": "explicit"}]
            assert first["supersededBy"] is None and first["why"]["rule"] == "restates"
            assert second["supersededBy"] == {"uri": new["uri"], "basis": "explicit"}
            assert second["why"]["rule"] == "superseded"
            current = result_of(
                await client.call_tool("recall", {"query": QUERY, "mode": mode, "current": True})
            )
            assert [h["uri"] for h in current["results"]] == [new["uri"]], mode
            assert current["droppedSuperseded"] == 1
        # A query only the old memory's words answer: its explicit successor is placed just before it.
        words = result_of(await client.call_tool("recall", {"query": "big room", "mode": "keyword"}))
        assert [h["uri"] for h in words["results"]] == [new["uri"], old["uri"]]
        assert words["results"][0]["supersedes"] == [{"uri": old["uri"], "basis": "explicit"}]
        # The old memory is known as superseded even when its successor does not rank (filtered out here:
        # a successor the filters refuse is not placed).
        for current in (False, True):
            only_old = result_of(
                await client.call_tool("recall", {"query": QUERY, "tags": ["rooms"], "current": current})
            )
            if current:
                assert only_old["results"] == [] and only_old["empty"] == "all_superseded"
            else:
                [hit] = only_old["results"]
                assert hit["uri"] == old["uri"]
                assert hit["supersededBy"] == {"uri": new["uri"], "basis": "explicit"}


async def test_each_hit_explains_what_matched(served):
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    await served.write(notes, ["Dana prefers pnpm over npm for every repo.", "Lunch is at noon."])
    async with served.client(token) as client:
        found = result_of(
            await client.call_tool("recall", {"query": "which package manager does Dana prefer"})
        )
        best = found["results"][0]
        assert best["text"].startswith("Dana")
        why = best["why"]
        assert "dana" in why["terms"] and all(0 < v <= 1 for v in why["terms"].values())
        assert abs(sum(why["terms"].values()) - why["keyword"]) < 0.01  # the terms make up the share
        assert why["similarity"] == best["similarity"] and 0 <= why["confidence"] <= 1
        assert found["results"][1]["why"]["confidence"] < why["confidence"]
        assert found["empty"] is None and found["memories"] == 2 and found["allowed"] == 2


async def test_every_explicit_successor_is_placed_before_what_it_replaces(served):
    """Two memories name the old one; neither holds the query's words, so neither ranks on its own: both
    are placed before it, the newest first (engram/service/explain.py), never below it."""
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    async with served.client(token) as client:
        old = result_of(await client.call_tool("remember", {"text": OLD}))
        first = result_of(await client.call_tool("remember", {"text": NEW, "supersedes": old["uri"]}))
        second = result_of(
            await client.call_tool(
                "remember", {"text": "Sync: Thursdays at 16:00 now.", "supersedes": old["uri"]}
            )
        )
        words = result_of(await client.call_tool("recall", {"query": "big room", "mode": "keyword"}))
        assert [h["uri"] for h in words["results"]] == [second["uri"], first["uri"], old["uri"]]
        assert all(
            h["supersedes"] == [{"uri": old["uri"], "basis": "explicit"}] for h in words["results"][:2]
        )
        current = result_of(
            await client.call_tool("recall", {"query": "big room", "mode": "keyword", "current": True})
        )
        assert old["uri"] not in [h["uri"] for h in current["results"]]
