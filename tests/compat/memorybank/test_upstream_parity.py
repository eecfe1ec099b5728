"""Where Memory Bank follows the retrieval plugin's own code rather than engram's habits (docs/memorybank.md):
duplicate ids, all-empty upserts, request bounds, the bookkeeping tags kept out of search text and out of
reach of every other door."""

from __future__ import annotations

import io

import orjson
from support.mcp import error_of, serve

from engram.compat.memorybank.documents import MAX_UPSERT_DOCUMENTS
from engram.compat.memorybank.routes import MAX_REQUEST_BYTES
from engram.errors import InvalidInput
from engram.store import MemoryWrite


async def count(bank) -> int:
    return await bank.ctx.store.read(lambda c: c.execute("SELECT count(*) FROM memories").fetchone()[0])


async def test_a_document_id_named_twice_keeps_its_last_version_once(bank):
    ids = await bank.upsert(
        [
            {"id": "dup", "text": "first version of the note", "user_id": "u1"},
            {"id": "other", "text": "another note entirely", "user_id": "u1"},
            {"id": "dup", "text": "second version of the note", "user_id": "u1"},
        ]
    )
    assert ids == ["dup", "other"]  # upstream's dict keyed by id: first place, last value
    [result] = await bank.query([{"query": "note", "user_id": "u1", "filter": {"document_id": "dup"}}])
    assert [(hit["id"], hit["text"]) for hit in result["results"]] == [
        ("dup_0", "second version of the note")
    ]


async def test_an_upsert_that_makes_no_chunk_answers_no_ids(bank):
    await bank.upsert([{"id": "keep", "text": "a note that was here before", "user_id": "u1"}])
    assert await bank.upsert([{"text": "   ", "user_id": "u1"}, {"text": "tiny", "user_id": "u1"}]) == []
    # as upstream, the named documents are still replaced: an empty text removes the old chunks
    assert await bank.upsert([{"id": "keep", "text": "\n\n", "user_id": "u1"}]) == []
    assert await count(bank) == 0
    mixed = await bank.upsert(
        [
            {"id": "a", "text": "a real note to keep", "user_id": "u1"},
            {"id": "b", "text": " ", "user_id": "u1"},
        ]
    )
    assert mixed == ["a", "b"]  # once any chunk is made, every document's id is answered


async def test_too_many_documents_or_bytes_are_refused_before_validation(bank):
    many = {"documents": [{"text": "x", "user_id": "u"}] * (MAX_UPSERT_DOCUMENTS + 1)}
    response = await bank.post("/upsert", many)
    payload = await response.json()
    assert response.status == 413 and f"at most {MAX_UPSERT_DOCUMENTS}" in payload["detail"]
    # the report's request: 13 MiB of 230,000 tiny documents, refused on its Content-Length
    tiny = orjson.dumps(
        {"documents": [{"text": "a tiny note of no weight at all", "user_id": "user-1"}] * 230_000}
    )
    assert 12 * 1024 * 1024 < len(tiny) < 16 * 1024 * 1024  # under aiohttp's own 16 MiB limit
    response = await bank.client.post(
        "/memorybank/upsert",
        data=io.BytesIO(tiny),
        headers={**bank.auth(), "Content-Type": "application/json"},
    )
    payload = await response.json()
    assert response.status == 413 and str(MAX_REQUEST_BYTES) in payload["detail"]

    async def chunked():  # no Content-Length: refused while it streams in
        for start in range(0, len(tiny), 1 << 20):
            yield tiny[start : start + (1 << 20)]

    response = await bank.client.post(
        "/memorybank/upsert", data=chunked(), headers={**bank.auth(), "Content-Type": "application/json"}
    )
    assert response.status == 413 and str(MAX_REQUEST_BYTES) in (await response.json())["detail"]
    assert await count(bank) == 0


async def test_a_url_too_long_for_a_record_source_is_a_422_naming_it(bank):
    body = {"documents": [{"text": "a note with a long url", "user_id": "u", "metadata": {"url": "€" * 700}}]}
    response = await bank.post("/upsert", body)
    assert response.status == 422
    assert (await response.json())["detail"][0]["loc"] == ["body", "documents", 0, "metadata", "url"]
    assert await count(bank) == 0


async def test_bookkeeping_tags_are_neither_keyword_text_nor_writable_elsewhere(bank):
    await bank.upsert(
        [
            {
                "id": "trip",
                "text": "Packing list for the Lisbon trip",
                "user_id": "dana",
                "metadata": {"author": "zed"},
            }
        ]
    )
    # keyword search over the space finds the chunk by its text, never by its bookkeeping tags
    gptbots = {"prompt": "dana trip zed", "top_k": 5, "embedding_rate": 0}
    resp = await bank.client.post("/v1/vector/match", json=gptbots, headers=bank.auth())
    found = await resp.json()
    assert resp.status == 200 and [i["content"] for i in found["list"]] == [
        "Packing list for the Lisbon trip"
    ]
    for prompt in ("dana", "zed", "mb", "dated", "user"):
        resp = await bank.client.post(
            "/v1/vector/match", json={**gptbots, "prompt": prompt}, headers=bank.auth()
        )
        assert (await resp.json())["list"] == [], prompt
    # no door but the shim writes the namespace: another key of the space cannot plant a tenant's document
    author = bank.ctx.settings.service_did
    for tag in (f"mb.user={bank.key_id}/dana", "MB.doc=trip", "mb.dated"):
        try:
            await bank.ctx.services.memories.write(
                bank.space, [MemoryWrite(author=author, text="planted", tags=(tag,))]
            )
        except InvalidInput as exc:
            assert exc.name == "ReservedTag"
        else:
            raise AssertionError(f"{tag} was written")
    [result] = await bank.query([{"query": "planted", "user_id": "dana", "top_k": 10}])
    assert [hit["text"] for hit in result["results"]] == ["Packing list for the Lisbon trip"]


async def test_mcp_remember_cannot_plant_a_memory_bank_document(aiohttp_server, settings):
    served = await serve(aiohttp_server, settings)
    space = await served.space("shared")
    bank_token, bank_key = await served.key(space)
    other_token, _ = await served.key(space)
    async with served.client(other_token) as client:
        error = error_of(
            await client.call_tool("remember", {"text": "planted", "tags": [f"mb.user={bank_key.id}/dana"]})
        )
    assert "reserved" in error
    assert (
        await served.ctx.store.read(lambda c: c.execute("SELECT count(*) FROM memories").fetchone()[0]) == 0
    )
    assert bank_token


async def test_an_import_cannot_plant_one_either(bank):
    from engram.service.imports import import_values

    lines = [
        (1, {"text": "planted", "tags": [f"mb.user={bank.key_id}/dana"]}),
        (2, {"text": "fine", "tags": ["team"]}),
    ]
    report = await import_values(
        bank.ctx.store, bank.ctx.services.spaces, bank.ctx.services.memories, bank.space, iter(lines)
    )
    assert [line for line, _ in report.skipped] == [1] and "reserved" in report.skipped[0][1]
    assert report.created == 1


async def test_a_token_granted_only_write_documents_may_query_as_the_seed_says(bank):
    import base64

    basic = base64.b64encode(f"{bank.key_id}:{bank.key}".encode()).decode()
    response = await bank.client.post(
        "/memorybank/exchange",
        data={"grant_type": "client_credentials", "scope": "write:documents"},
        headers={"Authorization": f"Basic {basic}"},
    )
    token = await response.json()
    assert response.status == 200 and token["scope"] == "write:documents"
    await bank.upsert(
        [{"text": "the seed saves and searches with one scope", "user_id": "u"}], token["access_token"]
    )
    [result] = await bank.query([{"query": "seed scope", "user_id": "u"}], token["access_token"])
    assert [hit["text"] for hit in result["results"]] == ["the seed saves and searches with one scope"]


async def test_answers_are_exactly_what_fastapi_writes_from_the_plugins_models(bank):
    from support.plugin_models import DeleteResponse, QueryResponse, UpsertResponse, as_fastapi_writes_it

    documents = [
        {
            "id": "full",
            "text": "The ferry to Tavira leaves at nine.",
            "user_id": "u",
            "metadata": {
                "source": "email",
                "source_id": "m-1",
                "url": "https://x.test/f",
                "created_at": "2024-05-01",
                "author": "ann",
            },
        },
        {"id": "bare", "text": "The ferry back leaves at six.", "user_id": "u"},
        {"text": "Ferry tickets are sold at the pier.", "user_id": "u", "metadata": {"source": "chat"}},
    ]
    upserted = await bank.post("/upsert", {"documents": documents})
    answer = await upserted.json()
    assert answer == as_fastapi_writes_it(UpsertResponse, answer)
    queried = await bank.post(
        "/query", {"queries": [{"query": "ferry", "user_id": "u"}, {"query": "none", "user_id": "nobody"}]}
    )
    answer = await queried.json()
    assert answer == as_fastapi_writes_it(QueryResponse, answer)  # every field present, unset ones null
    chunks = answer["results"][0]["results"]
    assert len(chunks) == 3 and all(
        chunk["metadata"]["url"] is None for chunk in chunks if chunk["id"] != "full_0"
    )
    assert answer["results"][1] == {"query": "none", "results": []}
    deleted = await bank.client.delete(
        "/memorybank/delete", json={"user_id": "u", "ids": ["bare"]}, headers=bank.auth()
    )
    answer = await deleted.json()
    assert answer == as_fastapi_writes_it(DeleteResponse, answer) == {"success": True}


async def test_a_nul_in_a_stored_field_is_a_422_naming_it_on_every_backend(bank):
    cases = [
        ({"text": "a note with a \x00 in it", "user_id": "u"}, ["text"]),
        ({"text": "a fine note", "user_id": "u\x00"}, ["user_id"]),
        ({"text": "a fine note", "user_id": "u", "metadata": {"author": "a\x00"}}, ["metadata", "author"]),
    ]
    for document, loc in cases:
        response = await bank.post(
            "/upsert", {"documents": [{"text": "fine first note", "user_id": "u"}, document]}
        )
        assert response.status == 422
        assert (await response.json())["detail"][0]["loc"] == ["body", "documents", 1, *loc]
    assert await count(bank) == 0
    # a query may carry one: nothing is stored, so it simply matches nothing
    [result] = await bank.query([{"query": "a\x00", "user_id": "u\x00", "filter": {"author": "\x00"}}])
    assert result["results"] == []


async def test_bookkeeping_tags_never_reach_the_embedded_text(bank):
    from engram.service.embedding import embed_documents

    space = await bank.ctx.services.spaces.require(bank.space)
    embed = bank.ctx.embedder, bank.ctx.pool, space
    [bare, booked, tagged] = await embed_documents(
        *embed,
        ["Packing list for the Lisbon trip"] * 3,
        [[], ["mb.doc=trip", "MB.user=1/dana", "mb.dated"], ["travel"]],
    )
    assert bare.vector.tobytes() == booked.vector.tobytes()  # the mb. tags are not part of the text
    assert bare.vector.tobytes() != tagged.vector.tobytes()  # while a content tag is


async def test_a_delete_naming_a_nul_matches_nothing(bank):
    await bank.upsert([{"id": "d", "text": "a note to keep around", "user_id": "u"}])
    for body in (
        {"user_id": "u\x00", "delete_all": True},
        {"user_id": "u", "ids": ["d\x00"]},
        {"user_id": "u", "filter": {"author": "a\x00"}},
    ):
        response = await bank.client.delete("/memorybank/delete", json=body, headers=bank.auth())
        assert (response.status, await response.json()) == (200, {"success": True})
    assert await count(bank) == 1
