"""user_id is a tenant of the key: whatever a body says, a key never reaches another key's documents."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.api import Reader

from engram.auth.crypto_keys import PrivateKey

user_ids = st.text(min_size=0, max_size=40) | st.sampled_from(["alice", "1/alice", "alice/", "", "*", "%"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(claimed=user_ids, wipe=st.booleans())
async def test_another_key_never_sees_or_deletes_a_tenants_documents(bank, claimed, wipe):
    if not hasattr(bank, "other"):
        bank.other = await bank.new_key()
        await bank.upsert([{"id": "secret", "text": "alice private diary entry", "user_id": "alice"}])
    # The other key may name any user_id, including alice and strings that look like namespaced tenants.
    [result] = await bank.query(
        [
            {
                "query": "alice private diary",
                "user_id": claimed,
                "top_k": 50,
                "filter": {"document_id": "secret"},
            }
        ],
        bank.other,
    )
    assert result["results"] == []
    if wipe:
        response = await bank.client.delete(
            "/memorybank/delete", json={"user_id": claimed, "delete_all": True}, headers=bank.auth(bank.other)
        )
        assert response.status == 200
    # ... and the same key under another user_id sees nothing either.
    if claimed != "alice":
        [mine] = await bank.query([{"query": "alice diary", "user_id": claimed, "top_k": 50}])
        assert all(hit["metadata"]["document_id"] != "secret" for hit in mine["results"])
    [owner] = await bank.query(
        [{"query": "alice diary", "user_id": "alice", "filter": {"document_id": "secret"}}]
    )
    assert [hit["id"] for hit in owner["results"]] == ["secret_0"]


async def test_chunks_are_ordinary_memories_found_by_signed_search_memories(bank):
    await bank.upsert(
        [
            {
                "id": "trip",
                "text": "We planned a hiking trip to the Dolomites in June.",
                "user_id": "u1",
                "metadata": {"source": "chat", "author": "ann", "created_at": "2024-05-01T08:00:00Z"},
            }
        ]
    )
    reader = Reader(bank.client, bank.ctx, bank.space, PrivateKey.generate("ES256"))
    response = await reader.search(q="hiking trip Dolomites", limit=5)
    assert response.status == 200, await response.text()
    [hit] = (await response.json())["memories"]
    assert hit["text"] == "We planned a hiking trip to the Dolomites in June."
    assert hit["createdAt"] == "2024-05-01T08:00:00.000Z"
    assert "mb.doc=trip" in hit["tags"]
    memory = await bank.ctx.services.memories.get(bank.space, hit["uri"])
    assert memory.attrs["documentId"] == "trip" and memory.attrs["chunkId"] == "trip_0"
    assert memory.attrs["userId"] == "u1" and memory.attrs["author"] == "ann"
