"""A recall waiting its turn for the embedder holds none of its space's search slots
(engram/service/hybrid.py `_scope`, docs/mcp.md#limits-for-agents): with one slot per space and no wait
for it, a keyword recall on the same space is served while a hybrid recall is queued for an embedding.
The embedder's only slot is held by the test, so nothing here depends on timing."""

from __future__ import annotations

import asyncio

from support.api import settings_with
from support.mcp import result_of, serve


async def test_a_recall_queued_for_the_embedder_holds_no_search_slot(aiohttp_server, settings):
    one_slot = settings_with(
        settings, search_concurrency=1, search_wait_ms=0, embed_concurrency=1, embed_wait_ms=60_000
    )
    served = await serve(aiohttp_server, one_slot)
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    await served.write(notes, ["The release train leaves on Thursdays."])
    slots = served.ctx.services.search.text.slots
    await slots.enter("someone else")  # the embedder's one slot: every embedding now waits
    async with served.client(token) as waiting_client, served.client(token) as client:
        queued = asyncio.ensure_future(
            waiting_client.call_tool("recall", {"query": "when does the train leave", "mode": "hybrid"})
        )
        while slots.waiting == 0:  # the hybrid recall reached the embedder's queue
            await asyncio.sleep(0.01)
        keyword = result_of(await client.call_tool("recall", {"query": "train", "mode": "keyword"}))
        assert [h["text"] for h in keyword["results"]] == ["The release train leaves on Thursdays."]
        assert not queued.done()
        slots.leave()  # the embedding proceeds
        hybrid = result_of(await queued)
        assert hybrid["results"][0]["text"] == "The release train leaves on Thursdays."
