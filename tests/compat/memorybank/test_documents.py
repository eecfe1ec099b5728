"""Golden request/response tests of the Memory Bank routes on the real app (docs/memorybank.md)."""

from __future__ import annotations

import asyncio

from support.memorybank_texts import MULTILINGUAL

from engram.compat.memorybank.chunks import split_text
from engram.store.dialect import dialect_of


async def chunks_of(bank, document_id: str, user_id: str = "u1", token: str | None = None) -> list[dict]:
    [result] = await bank.query(
        [{"query": "memory", "user_id": user_id, "top_k": 50, "filter": {"document_id": document_id}}], token
    )
    return result["results"]


async def stored_chunks(bank, document_id: str) -> list[tuple[str, str]]:
    """(chunkId, text) of every memory of the space with this documentId, straight from the store."""

    def read(conn):
        d = dialect_of(conn)  # the test reads either backend (TEST_STORE_BACKEND)
        rows = conn.execute(
            f"SELECT {d.json_text('attrs', 'chunkId')}, text FROM memories"
            f" WHERE {d.json_text('attrs', 'documentId')} = ? ORDER BY {d.json_value('attrs', 'chunkIndex')}",
            (document_id,),
        )
        return [tuple(row) for row in rows]

    return await bank.ctx.store.read(read)


async def test_upsert_chunks_a_long_multilingual_document_into_plugin_chunk_ids(bank):
    assert await bank.upsert([{"id": "long", "text": MULTILINGUAL, "user_id": "u1"}]) == ["long"]
    expected = split_text(MULTILINGUAL)
    assert len(expected) == 15
    assert await stored_chunks(bank, "long") == [(f"long_{i}", text) for i, text in enumerate(expected)]
    found = await chunks_of(bank, "long")
    assert sorted(hit["id"] for hit in found) == sorted(f"long_{i}" for i in range(15))
    assert {hit["text"] for hit in found} == set(expected)


async def test_upsert_of_an_existing_id_replaces_all_its_chunks(bank):
    await bank.upsert([{"id": "doc", "text": MULTILINGUAL, "user_id": "u1", "metadata": {"source": "file"}}])
    assert len(await stored_chunks(bank, "doc")) == 15
    ids = await bank.upsert([{"id": "doc", "text": "A much shorter text now.", "user_id": "u1"}])
    assert ids == ["doc"]
    assert await stored_chunks(bank, "doc") == [("doc_0", "A much shorter text now.")]
    [hit] = await chunks_of(bank, "doc")
    assert hit["id"] == "doc_0" and hit["embedding"] is None
    assert hit["metadata"] == {  # every field of the plugin's model, unset ones null, as FastAPI writes it
        "source": None,
        "source_id": None,
        "url": None,
        "created_at": None,
        "author": None,
        "document_id": "doc",
    }
    assert -1.0 <= hit["score"] <= 1.0


async def test_documents_without_id_get_fresh_ids_and_whitespace_documents_get_no_chunks(bank):
    ids = await bank.upsert(
        [
            {"text": "first unnamed note here", "user_id": "u1"},
            {"text": "   ", "user_id": "u1", "id": "blank"},
        ]
    )
    assert len(ids) == 2 and ids[1] == "blank" and len(ids[0]) == 36  # a uuid4
    assert len(await stored_chunks(bank, ids[0])) == 1
    assert await stored_chunks(bank, "blank") == []


async def test_queries_answer_in_input_order_each_echoing_its_query(bank):
    docs = [
        {"id": f"d{i}", "text": f"note about {word} and more", "user_id": "u1"}
        for i, word in enumerate(["apples", "boats", "clouds", "dragons", "engines"])
    ]
    await bank.upsert(docs)
    queries = [
        {"query": "dragons", "user_id": "u1"},
        {"query": "apples", "user_id": "u1", "top_k": 1},
        {"query": "boats", "user_id": "u1", "top_k": 500},
        {"query": "clouds", "user_id": "nobody"},
    ]
    results = await bank.query(queries)
    assert [r["query"] for r in results] == ["dragons", "apples", "boats", "clouds"]
    assert len(results[0]["results"]) == 3  # top_k defaults to 3
    assert results[0]["results"][0]["id"] == "d3_0"
    assert [h["id"] for h in results[1]["results"]] == ["d0_0"]
    assert len(results[2]["results"]) == 5  # clamped to 50, only 5 exist
    assert results[3]["results"] == []  # another user_id of the same key sees nothing


async def test_top_k_is_clamped_to_50(bank):
    await bank.upsert(
        [{"id": f"n{i}", "text": f"shared words plus token{i}", "user_id": "u1"} for i in range(60)]
    )
    [result] = await bank.query([{"query": "shared words", "user_id": "u1", "top_k": 1000}])
    assert len(result["results"]) == 50
    [result] = await bank.query(
        [{"query": "shared words", "user_id": "u1", "top_k": "7"}]
    )  # coerced as upstream
    assert len(result["results"]) == 7
    [result] = await bank.query([{"query": "shared words", "user_id": "u1", "top_k": None}])
    assert len(result["results"]) == 3  # upstream's `Optional[int] = 3` takes null: the default


async def test_metadata_filters_are_anded_equality(bank):
    await bank.upsert(
        [
            {
                "id": "a",
                "text": "project meeting notes",
                "user_id": "u1",
                "metadata": {
                    "source": "email",
                    "source_id": "m-1",
                    "author": "ann",
                    "url": "https://x.test/a",
                },
            },
            {
                "id": "b",
                "text": "project meeting notes",
                "user_id": "u1",
                "metadata": {"source": "chat", "source_id": "m-2", "author": "ann"},
            },
            {
                "id": "c",
                "text": "project meeting notes",
                "user_id": "u1",
                "metadata": {"source": "chat", "source_id": "m-3", "author": "bob"},
            },
        ]
    )

    async def ids(flt):
        [result] = await bank.query(
            [{"query": "project meeting", "user_id": "u1", "filter": flt, "top_k": 10}]
        )
        return sorted(hit["metadata"]["document_id"] for hit in result["results"])

    assert await ids({"source": "chat"}) == ["b", "c"]
    assert await ids({"author": "ann"}) == ["a", "b"]
    assert await ids({"author": "ann", "source": "chat"}) == ["b"]
    assert await ids({"source_id": "m-3"}) == ["c"]
    assert await ids({"document_id": "a"}) == ["a"]
    assert await ids({"author": "nobody"}) == []
    [result] = await bank.query([{"query": "x", "user_id": "u1", "filter": {"document_id": "a"}}])
    assert result["results"][0]["metadata"] == {
        "source": "email",
        "source_id": "m-1",
        "url": "https://x.test/a",
        "created_at": None,
        "author": "ann",
        "document_id": "a",
    }


async def test_date_filters_are_inclusive_at_both_ends(bank):
    stamps = {
        "jan1": "2024-01-01T00:00:00Z",
        "jan2": "2024-01-02T00:00:00+00:00",
        "jan2noon": "2024-01-02T12:00:00Z",
        "jan3": "2024-01-03T09:30:00+02:00",
    }
    await bank.upsert(
        [
            {"id": name, "text": "daily journal entry", "user_id": "u1", "metadata": {"created_at": stamp}}
            for name, stamp in stamps.items()
        ]
    )

    async def ids(flt):
        [result] = await bank.query([{"query": "journal", "user_id": "u1", "filter": flt, "top_k": 10}])
        return sorted(hit["metadata"]["document_id"] for hit in result["results"])

    assert await ids({"start_date": "2024-01-02T00:00:00Z"}) == ["jan2", "jan2noon", "jan3"]
    assert await ids({"end_date": "2024-01-02T12:00:00Z"}) == ["jan1", "jan2", "jan2noon"]
    assert await ids({"start_date": "2024-01-02T00:00:00Z", "end_date": "2024-01-02T00:00:00Z"}) == ["jan2"]
    # A date without a time is midnight UTC (as upstream): the rest of that day is outside end_date.
    assert await ids({"end_date": "2024-01-02"}) == ["jan1", "jan2"]
    assert await ids({"start_date": "2024-01-03T07:30:00Z"}) == ["jan3"]  # 09:30+02:00 is 07:30Z
    [hit] = (await bank.query([{"query": "x", "user_id": "u1", "filter": {"document_id": "jan3"}}]))[0][
        "results"
    ]
    assert hit["metadata"]["created_at"] == "2024-01-03T09:30:00+02:00"  # echoed as given


async def test_unparsable_filter_dates_are_422_not_now(bank):
    response = await bank.post(
        "/query",
        {
            "queries": [
                {"query": "q", "user_id": "u1"},
                {"query": "q", "user_id": "u1", "filter": {"start_date": "1674743424.0"}},
            ]
        },
    )
    assert response.status == 422
    [error] = (await response.json())["detail"]
    assert error["loc"] == ["body", "queries", 1, "filter", "start_date"]
    assert error["type"] == "value_error.datetime"


async def test_a_created_at_is_any_string_and_only_a_readable_one_dates_a_chunk(bank):
    docs = [
        {
            "id": "dated",
            "text": "journal entry about the lighthouse",
            "user_id": "u1",
            "metadata": {"created_at": "2024-05-01"},
        },
        {"id": "undated", "text": "journal entry about the lighthouse", "user_id": "u1"},
        *(
            {
                "id": f"odd{i}",
                "text": "journal entry about the lighthouse",
                "user_id": "u1",
                "metadata": {"created_at": value},
            }
            for i, value in enumerate(["now", "", "1674743424", "last tuesday"])
        ),
    ]
    assert await bank.upsert(docs) == [d["id"] for d in docs]  # upstream's created_at is Optional[str]

    async def ids(flt):
        [result] = await bank.query([{"query": "lighthouse", "user_id": "u1", "filter": flt, "top_k": 10}])
        return sorted(hit["metadata"]["document_id"] for hit in result["results"])

    assert await ids({}) == sorted(d["id"] for d in docs)
    # upstream stores no date for them, so no date filter ever matches an undated chunk
    assert await ids({"start_date": "2000-01-01"}) == ["dated"]
    assert await ids({"end_date": "2100-01-01"}) == ["dated"]
    [hit] = (await bank.query([{"query": "x", "user_id": "u1", "filter": {"document_id": "odd3"}}]))[0][
        "results"
    ]
    assert hit["metadata"]["created_at"] == "last tuesday"  # echoed as given
    response = await bank.client.delete(
        "/memorybank/delete",
        json={"user_id": "u1", "filter": {"end_date": "2100-01-01"}},
        headers=bank.auth(),
    )
    assert response.status == 200
    assert await ids({}) == sorted(d["id"] for d in docs if d["id"] != "dated")


async def test_validation_errors_have_the_pydantic_v1_shape(bank):
    cases = [
        ("/upsert", {}, ["body", "documents"], "value_error.missing", "field required"),
        (
            "/upsert",
            {"documents": [{"text": ["x"], "user_id": "u"}]},
            ["body", "documents", 0, "text"],
            "type_error.str",
            "str type expected",
        ),
        (
            "/upsert",
            {"documents": [{"text": "x"}]},
            ["body", "documents", 0, "user_id"],
            "value_error.missing",
            "field required",
        ),
        (
            "/upsert-action",
            {"documents": [{"text": "x", "user_id": "u", "metadata": {"source": "fax"}}]},
            ["body", "documents", 0, "metadata", "source"],
            "type_error.enum",
            None,
        ),
        (
            "/query",
            {"queries": [{"query": "q", "user_id": "u", "top_k": "many"}]},
            ["body", "queries", 0, "top_k"],
            "type_error.integer",
            "value is not a valid integer",
        ),
        (
            "/query-action",
            {"queries": [{"query": "q", "user_id": "u", "top_k": 0}]},
            ["body", "queries", 0, "top_k"],
            "value_error.number.not_gt",
            "ensure this value is greater than 0",
        ),
        ("/query", {"queries": "all"}, ["body", "queries"], "type_error.list", "value is not a valid list"),
        ("/query", [], ["body"], "type_error.dict", "value is not a valid dict"),
    ]
    for path, body, loc, kind, msg in cases:
        response = await bank.post(path, body)
        assert response.status == 422, (path, body)
        payload = await response.json()
        assert set(payload) == {"detail"}
        error = next(e for e in payload["detail"] if e["loc"] == loc)
        assert set(error) == {"loc", "msg", "type"} and error["type"] == kind
        if msg:
            assert error["msg"] == msg
    response = await bank.client.post("/memorybank/query", data=b"{not json", headers=bank.auth())
    assert response.status == 422
    assert (await response.json())["detail"][0]["type"] == "value_error.jsondecode"


async def test_auth_failures_have_upstreams_statuses(bank):
    body = {"queries": [{"query": "q", "user_id": "u"}]}
    # FastAPI's HTTPBearer refuses a missing or malformed header with 403 before the token is looked at
    for headers, detail in (
        ({}, "Not authenticated"),
        ({"Authorization": "Bearer "}, "Not authenticated"),
        ({"Authorization": "Bearer"}, "Not authenticated"),
        ({"Authorization": "Basic abc"}, "Invalid authentication credentials"),
    ):
        response = await bank.client.post("/memorybank/query", json=body, headers=headers)
        assert (response.status, await response.json()) == (403, {"detail": detail}), headers
    response = await bank.client.post(
        "/memorybank/query", json=body, headers={"Authorization": "Bearer engram_nope"}
    )
    assert response.status == 401
    assert await response.json() == {"detail": "Invalid or missing token"}
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    key_id = (await bank.ctx.store.read(lambda c: c.execute("SELECT max(id) FROM api_keys").fetchone()))[0]
    from engram.service.apikeys import revoke_api_key

    await revoke_api_key(bank.ctx.store, key_id)
    response = await bank.post("/query", body)
    assert response.status == 401  # a revoked key stops working at once


async def test_scopes_map_onto_key_scopes(bank):
    reader = await bank.new_key(["read"])
    response = await bank.post("/upsert", {"documents": [{"text": "hello there", "user_id": "u"}]}, reader)
    assert response.status == 403
    assert "write" in (await response.json())["detail"]
    assert (await bank.post("/query", {"queries": []}, reader)).status == 200
    writer = await bank.new_key(["write"])
    # the seed gives /query-action the write:documents scope, so a writer may query too
    for path in ("/query-action", "/query"):
        assert (await bank.post(path, {"queries": []}, writer)).status == 200
    assert (
        await bank.client.delete(
            "/memorybank/delete", json={"user_id": "u", "delete_all": True}, headers=bank.auth(reader)
        )
    ).status == 403


async def test_delete_by_ids_filter_and_all_within_the_user(bank):
    await bank.upsert(
        [
            {
                "id": f"d{i}",
                "text": f"entry {i} body text",
                "user_id": "u1",
                "metadata": {"source": "chat" if i % 2 else "email"},
            }
            for i in range(4)
        ]
    )
    await bank.upsert([{"id": "d0", "text": "other user's entry", "user_id": "u2"}])
    response = await bank.client.delete("/memorybank/delete", json={"user_id": "u1"}, headers=bank.auth())
    assert response.status == 400
    assert await response.json() == {"detail": "One of ids, filter, or delete_all is required"}

    async def delete(body):
        response = await bank.client.delete(
            "/memorybank/delete", json={"user_id": "u1", **body}, headers=bank.auth()
        )
        assert response.status == 200 and await response.json() == {"success": True}

    async def left(user):
        [r] = await bank.query([{"query": "entry", "user_id": user, "top_k": 10}])
        return sorted(h["id"] for h in r["results"])

    await delete({"ids": ["d0"]})
    assert await left("u1") == ["d1_0", "d2_0", "d3_0"]
    assert await left("u2") == ["d0_0"]  # same document id, other tenant: untouched
    await delete({"filter": {"source": "chat"}})
    assert await left("u1") == ["d2_0"]
    await delete({"delete_all": True})
    assert await left("u1") == []
    assert await left("u2") == ["d0_0"]


async def test_no_xrpc_envelope_leaks(bank):
    for method, path in (
        ("GET", "/memorybank/nowhere"),
        ("GET", "/memorybank/query"),
        ("PUT", "/memorybank/upsert"),
    ):
        response = await bank.client.request(method, path)
        payload = await response.json()
        assert response.status in (404, 405) and set(payload) == {"detail"}, (method, path, payload)


async def test_concurrent_upserts_of_one_document_leave_one_version(bank):
    texts = [f"version {i} " + "word " * 300 for i in range(4)]
    await asyncio.gather(*(bank.upsert([{"id": "race", "text": t, "user_id": "u1"}]) for t in texts))
    stored = await stored_chunks(bank, "race")
    assert [chunk_id for chunk_id, _ in stored] == ["race_0", "race_1"]  # one version's chunks, no stale ones
    assert sum(text.count("version") for _, text in stored) == 1


async def test_openapi_and_plugin_manifest(bank):
    response = await bank.client.get("/memorybank/openapi.json")
    doc = await response.json()
    assert doc["info"]["title"] == "Memory Bank API"
    assert doc["servers"] == [{"url": "https://engram.test/memorybank"}]
    flows = doc["components"]["securitySchemes"]["OAuth2"]["flows"]
    assert flows["authorizationCode"]["authorizationUrl"] == "https://engram.test/memorybank/login"
    assert flows["authorizationCode"]["tokenUrl"] == "https://engram.test/memorybank/exchange"
    assert doc["paths"]["/upsert-action"]["post"]["x-openai-isConsequential"] is False
    assert doc["paths"]["/upsert-action"]["post"]["operationId"] == "upsert_upsert_post"
    assert set(doc["components"]["schemas"]) >= {"Document", "Query", "QueryResult", "HTTPValidationError"}
    for path in ("/.well-known/ai-plugin.json", "/memorybank/.well-known/ai-plugin.json"):
        manifest = await (await bank.client.get(path)).json()
        assert manifest["auth"]["type"] == "oauth"
        assert manifest["api"]["url"] == "https://engram.test/memorybank/.well-known/openapi.yaml"
    response = await bank.client.get("/memorybank/.well-known/openapi.yaml")
    assert response.status == 200 and response.content_type == "text/yaml"


async def test_limits_answer_422_and_413_in_the_plugin_shape(bank, monkeypatch):
    response = await bank.post("/query", {"queries": [{"query": "q", "user_id": "u" * 513}]})
    assert response.status == 422
    [error] = (await response.json())["detail"]
    assert (
        error["loc"] == ["body", "queries", 0, "user_id"]
        and error["type"] == "value_error.any_str.max_length"
        and error["msg"] == "ensure this value has at most 512 characters"  # pydantic 1's wording
    )
    response = await bank.post("/query", {"queries": [{"query": "q", "user_id": "u"}] * 17})
    assert response.status == 422 and (await response.json())["detail"][0]["loc"] == ["body", "queries"]

    from engram.compat.memorybank import documents

    monkeypatch.setattr(documents, "MAX_UPSERT_CHUNKS", 3)  # the real cap is 2000 chunks (~400k tokens)
    response = await bank.post("/upsert", {"documents": [{"text": "word " * 1000, "user_id": "u"}]})
    assert response.status == 413
    assert "at most 3 per request" in (await response.json())["detail"]
    assert await bank.ctx.store.read(lambda c: c.execute("SELECT count(*) FROM memories").fetchone()[0]) == 0


async def test_framework_serves_the_schema_with_relative_urls(bank):
    doc = await (await bank.client.get("/compat/memorybank/openapi.json")).json()
    assert doc["servers"] == [{"url": "/memorybank"}]
    assert set(doc["paths"]) == {"/upsert-action", "/query-action"}


async def test_an_oversized_body_is_413_detail(aiohttp_client, settings):
    from engram.app import create_app
    from engram.app_keys import context_key
    from engram.config import override
    from engram.service.apikeys import create_api_key

    client = await aiohttp_client(await create_app(override(settings, max_body_bytes=2048)))
    ctx = client.app[context_key]
    space = await ctx.services.spaces.create_hosted("small")
    _, key = await create_api_key(ctx.store, space.uri, ["read", "write"])
    body = {"documents": [{"text": "x" * 5000, "user_id": "u"}]}
    response = await client.post("/memorybank/upsert", json=body, headers={"Authorization": f"Bearer {key}"})
    assert response.status == 413 and await response.json() == {"detail": "Request body is too large"}
    response = await client.post("/memorybank/exchange", data={"grant_type": "x" * 5000})
    assert response.status == 413 and set(await response.json()) == {"detail"}
