"""MCP `remember` naming the memory it updates: recall (every mode) and GPTBots then rank the update first,
with no heuristic involved; a malformed `supersedes` is the caller's error and writes nothing
(docs/mcp.md, engram/service/supersession.py)."""

from __future__ import annotations

import httpx2
from support.mcp import error_of, result_of

OLD = "The team's weekly sync is on Mondays at 10:00 in the big room."
NEW = "Weekly sync: now Thursdays, 15:00."  # shares few words and little meaning with OLD on purpose
QUERY = "when is the weekly team sync held?"


async def test_an_explicit_update_ranks_first_on_every_door(served):
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    async with served.client(token) as client:
        old = result_of(await client.call_tool("remember", {"text": OLD}))
        bad = await client.call_tool("remember", {"text": NEW, "supersedes": "not a uri!"})
        assert "supersedes" in error_of(bad)
        assert len((await served.ctx.services.memories.list(notes, limit=10))[0]) == 1  # nothing written
        new = result_of(await client.call_tool("remember", {"text": NEW, "supersedes": old["uri"]}))
        for mode in ("vector", "hybrid", "keyword"):
            hits = result_of(await client.call_tool("recall", {"query": QUERY, "mode": mode}))["results"]
            assert [h["uri"] for h in hits[:2]] == [new["uri"], old["uri"]], mode
    stored = await served.ctx.services.memories.get(notes, new["uri"])
    assert stored.attrs == {"supersedes": old["uri"]}
    async with httpx2.AsyncClient(base_url=served.base, headers={"Authorization": f"Bearer {token}"}) as http:
        for rate in (0, 0.5, 1):
            resp = await http.post(
                "/v1/vector/match", json={"prompt": QUERY, "top_k": 2, "embedding_rate": rate}
            )
            assert resp.status_code == 200
            assert [i["content"] for i in resp.json()["list"]] == [NEW, OLD], rate
            first, second = resp.json()["list"]  # engram's documented extra fields (docs/compat.md)
            assert first["engram_supersedes"] == [{"uri": old["uri"], "basis": "explicit"}]
            assert (first["engram_superseded_by"], second["engram_supersedes"]) == (None, [])
            assert second["engram_superseded_by"] == {"uri": new["uri"], "basis": "explicit"}


async def test_supersedes_must_name_one_of_the_callers_memories_and_a_refusal_writes_nothing(served):
    notes, other = await served.space("notes"), await served.space("other")
    token, _ = await served.key(notes)
    foreign_token, _ = await served.key(other)
    async with served.client(foreign_token) as foreign:
        theirs = result_of(await foreign.call_tool("remember", {"text": "another tenant's memory"}))
    async with served.client(token) as client:
        mine = result_of(await client.call_tool("remember", {"text": OLD}))
        rkey = mine["uri"].rsplit("/", 1)[-1]
        for named in (theirs["uri"], mine["uri"][: -len(rkey)] + "3zzzzzzzzzzzz", "3zzzzzzzzzzzz"):
            refused = error_of(await client.call_tool("remember", {"text": NEW, "supersedes": named}))
            assert refused.startswith("MemoryNotFound: "), (named, refused)
        assert len((await served.ctx.services.memories.list(notes, limit=10))[0]) == 1  # nothing written
        by_rkey = result_of(await client.call_tool("remember", {"text": NEW, "supersedes": rkey}))
    stored = await served.ctx.services.memories.get(notes, by_rkey["uri"])
    assert stored.attrs == {"supersedes": rkey}
