"""GPTBots `POST /v1/vector/match`: golden requests and responses for every field and quirk."""

from __future__ import annotations

import pytest
from support.compat import FACTS, bearer, start

PATH = "/v1/vector/match"


@pytest.fixture
async def kb(aiohttp_client, settings):
    engram = await start(aiohttp_client, settings)
    one, two, other = await engram.space("kb-one"), await engram.space("kb-two"), await engram.space("other")
    await engram.write(one.uri, FACTS[:3])
    await engram.write(two.uri, FACTS[3:])
    await engram.write(other.uri, ["Dana owns a secret Postgres cluster nobody else may see."])
    token, key = await engram.key(one.uri, two.uri)
    return engram, token, key, one, two


async def match(engram, token, body, status=200):
    resp = await engram.client.post(PATH, json=body, headers=bearer(token))
    payload = await resp.json()
    assert resp.status == status, payload
    return resp, payload


async def test_semantic_match_answers_in_the_gptbots_shape(kb):
    engram, token, *_ = kb
    resp, body = await match(
        engram, token, {"prompt": "Which Postgres version runs in production?", "top_k": 3}
    )
    assert resp.headers["X-Engram-Reranker"] == "none"
    assert body["total"] == len(body["list"]) == 3
    first = body["list"][0]
    assert set(first) == {
        "content",
        "data_id",
        "document_name",
        "score",
        "engram_supersedes",
        "engram_superseded_by",
    }
    assert first["content"] == FACTS[1]
    assert 0 <= first["score"] <= 1
    assert [i["score"] for i in body["list"]] == sorted((i["score"] for i in body["list"]), reverse=True)
    assert all("secret" not in i["content"] for i in body["list"])  # another space, not the key's


async def test_numeric_strings_are_accepted(kb):
    engram, token, *_ = kb
    _, body = await match(
        engram, token, {"prompt": "passport", "top_k": "2", "embedding_rate": "0", "doc_correlation": "0.1"}
    )
    assert body["list"][0]["content"] == FACTS[4]
    assert body["total"] <= 2


async def test_keyword_only_scores_are_shares_of_the_prompt_not_of_the_best_match(kb):
    """docs/compat.md: the best keyword match is not promoted to 1; a weaker prompt match scores lower."""
    engram, token, *_ = kb
    _, body = await match(engram, token, {"prompt": "Henrik token gateway", "top_k": 5, "embedding_rate": 0})
    assert body["list"][0]["content"] == FACTS[2] and 0.0 < body["list"][0]["score"] < 1.0
    _, weaker = await match(
        engram, token, {"prompt": "Henrik zanzibar quokka", "top_k": 5, "embedding_rate": 0}
    )
    assert weaker["list"][0]["content"] == FACTS[2] and weaker["list"][0]["score"] < body["list"][0]["score"]
    assert all("Henrik" in i["content"] or "token" in i["content"] for i in body["list"])


async def test_hybrid_weight_is_between_keyword_and_semantic(kb):
    engram, token, *_ = kb
    _, body = await match(engram, token, {"prompt": "weekly sync Tuesday", "top_k": 5, "embedding_rate": 0.5})
    assert body["list"][0]["content"] == FACTS[3]


async def test_group_ids_null_all_empty_none_data_ids_empty_all_and_their_union(kb):
    engram, token, key, one, _ = kb
    ids = {uri: short for short, uri in key.spaces.items()}
    everything = {"prompt": "Dana", "top_k": 50, "embedding_rate": 0}
    _, all_kbs = await match(engram, token, {**everything, "group_ids": None, "data_ids": None})
    assert {i["content"] for i in all_kbs["list"]} == {FACTS[0], FACTS[4]}
    _, none = await match(engram, token, {**everything, "group_ids": [], "data_ids": []})
    assert none == {"total": 0, "list": []}
    _, only_one = await match(engram, token, {**everything, "group_ids": [ids[one.uri]]})
    assert {i["content"] for i in only_one["list"]} == {FACTS[0]}
    _, only_empty = await match(engram, token, {**everything, "group_ids": []})
    assert only_empty["total"] == 0
    # an empty data_ids is "all docs" (the API's field description), not an empty scope
    _, no_docs_named = await match(engram, token, {**everything, "data_ids": []})
    assert no_docs_named == all_kbs
    passport = next(i for i in all_kbs["list"] if i["content"] == FACTS[4])
    _, union = await match(
        engram, token, {**everything, "group_ids": [ids[one.uri]], "data_ids": [passport["data_id"]]}
    )
    assert {i["content"] for i in union["list"]} == {FACTS[0], FACTS[4]}
    _, docs_only = await match(engram, token, {**everything, "data_ids": [passport["data_id"]]})
    assert [i["content"] for i in docs_only["list"]] == [FACTS[4]]


async def test_data_id_groups_chunks_of_one_document(kb):
    engram, token, _, one, _ = kb
    await engram.write(
        one.uri,
        ["Chapter one: the lighthouse keeper.", "Chapter two: the lighthouse storm."],
        attrs={"documentId": "book-7", "documentName": "lighthouse.md"},
    )
    _, body = await match(
        engram, token, {"prompt": "lighthouse", "top_k": 10, "embedding_rate": 0, "data_ids": ["book-7"]}
    )
    assert body["total"] == 2
    assert {(i["data_id"], i["document_name"]) for i in body["list"]} == {("book-7", "lighthouse.md")}


async def test_doc_correlation_is_a_minimum_score(kb):
    engram, token, *_ = kb
    _, loose = await match(
        engram, token, {"prompt": "Postgres", "top_k": 5, "embedding_rate": 0.5, "doc_correlation": 0.1}
    )
    _, strict = await match(
        engram, token, {"prompt": "Postgres", "top_k": 5, "embedding_rate": 0.5, "doc_correlation": 0.95}
    )
    assert all(i["score"] >= 0.95 for i in strict["list"])
    assert strict["total"] < loose["total"]


@pytest.mark.parametrize(
    "rerank", ["BGE-Rerank", "Jina-reranker-v2-base-multilingual", "Jina-colbert-v2", "BCE-Rerank", None]
)
async def test_the_four_reranker_names_are_accepted(kb, rerank):
    engram, token, *_ = kb
    resp, body = await match(engram, token, {"prompt": "sync", "top_k": 1, "rerank_version": rerank})
    assert body["total"] == 1 and resp.headers["X-Engram-Reranker"] == "none"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"top_k": 3}, 40000),
        ({"prompt": "", "top_k": 3}, 40000),
        ({"prompt": "x"}, 40000),
        ({"prompt": "x", "top_k": 0}, 40000),
        ({"prompt": "x", "top_k": 51}, 40000),
        ({"prompt": "x", "top_k": 2.5}, 40000),
        ({"prompt": "x", "top_k": "five"}, 40000),
        ({"prompt": "x", "top_k": True}, 40000),
        ({"prompt": "x", "top_k": 3, "embedding_rate": 1.5}, 40000),
        ({"prompt": "x", "top_k": 3, "doc_correlation": 0.05}, 40000),
        ({"prompt": "x", "top_k": 3, "doc_correlation": 0.96}, 40000),
        ({"prompt": "x", "top_k": 3, "rerank_version": "Cohere"}, 40000),
        ({"prompt": "x", "top_k": 3, "group_ids": "1"}, 40000),
        ({"prompt": "x", "top_k": 3, "group_ids": ["999999"]}, 40000),
        ({"prompt": "x", "top_k": 3, "data_ids": [str(i) for i in range(11)]}, 40332),
    ],
)
async def test_bad_parameters_are_400_with_gptbots_codes(kb, body, code):
    engram, token, *_ = kb
    _, payload = await match(engram, token, body, status=400)
    assert payload["code"] == code and set(payload) == {"code", "message"}


async def test_auth_failures_are_40127_and_a_deleted_space_is_20059(kb):
    engram, token, _, one, _ = kb
    resp = await engram.client.post(PATH, json={"prompt": "x", "top_k": 1})
    assert resp.status == 401 and (await resp.json())["code"] == 40127
    resp = await engram.client.post(PATH, json={"prompt": "x", "top_k": 1}, headers=bearer("engram_nope"))
    assert resp.status == 401 and (await resp.json())["code"] == 40127
    await engram.ctx.services.spaces.delete(one.uri)
    resp = await engram.client.post(PATH, json={"prompt": "x", "top_k": 1}, headers=bearer(token))
    assert resp.status == 404 and (await resp.json())["code"] == 20059


async def test_http_level_errors_keep_the_gptbots_shape(kb):
    engram, token, *_ = kb
    for resp in [
        await engram.client.get(PATH),
        await engram.client.post("/v1/vector/nope"),
        await engram.client.post(PATH, data=b"{bad", headers=bearer(token)),
    ]:
        payload = await resp.json()
        assert resp.status in (400, 404, 405) and set(payload) == {"code", "message"}


async def test_repeated_data_ids_count_once_toward_the_ten_document_limit(kb):
    engram, token, *_ = kb
    repeated = [str(i) for i in range(10)] * 3  # 30 entries, 10 distinct documents
    await match(engram, token, {"prompt": "x", "top_k": 3, "data_ids": repeated, "embedding_rate": 0})
    _, payload = await match(
        engram,
        token,
        {"prompt": "x", "top_k": 3, "data_ids": [*repeated, "10"], "embedding_rate": 0},
        status=400,
    )
    assert payload["code"] == 40332


async def test_a_data_id_holding_a_nul_names_no_document(kb):
    engram, token, *_ = kb
    _, found = await match(engram, token, {"prompt": "Postgres", "top_k": 1, "embedding_rate": 0})
    real = found["list"][0]["data_id"]
    _, own = await match(
        engram, token, {"prompt": "Postgres", "top_k": 3, "data_ids": [real], "embedding_rate": 0}
    )
    assert own["total"] == 1
    # SQLite compared it cut at the NUL (so it named `real`); PostgreSQL refused the parameter (a 500)
    _, cut = await match(
        engram, token, {"prompt": "Postgres", "top_k": 3, "data_ids": [real + "\x00"], "embedding_rate": 0}
    )
    assert cut == {"total": 0, "list": []}
