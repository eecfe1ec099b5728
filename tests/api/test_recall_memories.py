"""garden.engram.recallMemories over signed HTTP: searchMemories' auth, engram's ranking with the new
filters, supersession and explanations, and clear 400s (docs/protocol.md#recallmemories)."""

from __future__ import annotations

from support.api import MODEL, Reader

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.crypto_keys import PrivateKey
from engram.service.hybrid import Scope, TextSearch
from engram.store import MemoryWrite

NSID = "garden.engram.recallMemories"
Q = "which database does staging run"
NOTES = [
    ("Staging runs Postgres 15.4 on pg-staging-01.", ("db",), {"env": "staging", "version": 15}),
    ("The staging database pg-staging-01 now runs Postgres 16.2.", ("db", "current"), {"env": "staging", "version": 16}),
    ("Production runs Postgres 16.2 on pg-prod-02.", ("db",), {"env": "prod", "version": 16}),
    ("Staging is refreshed from a production snapshot every Sunday.", ("ops",), {"env": "staging"}),
]  # fmt: skip


async def start(aiohttp_client, settings) -> tuple[Reader, list]:
    client = await aiohttp_client(await create_app(settings))
    ctx = client.app[context_key]
    space = await ctx.services.spaces.create_hosted("recall")
    author = ctx.settings.service_did
    records = []
    for i, (text, tags, attrs) in enumerate(NOTES):
        if i == 1:  # the upgrade names what it replaces: an explicit update
            attrs = {**attrs, "supersedes": records[0].uri}
        records += await ctx.services.memories.write(
            space.uri,
            [
                MemoryWrite(
                    author=author,
                    text=text,
                    tags=tags,
                    attrs=attrs,
                    created_at=f"2026-0{i + 1}-01T00:00:00.000Z",
                )
            ],
        )
    return Reader(client, ctx, space.uri, PrivateKey.generate("ES256")), records


async def recall(reader: Reader, **body):
    return await reader.post(NSID, {"space": reader.space, "q": Q, **body})


async def test_hits_carry_supersession_and_why_and_agree_with_the_ranking(aiohttp_client, settings):
    reader, records = await start(aiohttp_client, settings)
    r = await recall(reader, limit=10)
    assert r.status == 200
    body = await r.json()
    uris = [h["memory"]["uri"] for h in body["hits"]]
    space = await reader.ctx.services.spaces.require(reader.space)
    ranking = await reader.ctx.services.ranking.run([Scope(space)], TextSearch(Q, limit=10), "hybrid")
    assert uris == [h.memory.uri for h in ranking.hits]  # the one pipeline
    old, new = records[0].uri, records[1].uri
    assert uris.index(new) < uris.index(old)  # the successor ranks above what it replaces
    by_uri = {h["memory"]["uri"]: h for h in body["hits"]}
    assert by_uri[old]["supersededBy"] == {"uri": new, "basis": "explicit"}
    assert {"uri": old, "basis": "explicit"} in by_uri[new]["supersedes"]
    assert by_uri[old]["why"]["rule"] == "superseded" and by_uri[new]["why"]["rule"] == "restates"
    assert "supersededBy" not in by_uri[new]
    for hit in body["hits"]:
        why = hit["why"]
        assert 0 <= why["confidence"] <= 1000 and 0 <= hit["score"] <= 1000
        # the terms' parts make up the keyword share (each truncated to 0-1000)
        parts = sum(t["score"] for t in why["terms"])
        assert why.get("keyword", 0) - len(why["terms"]) <= parts <= why.get("keyword", 0)
    staging = by_uri[records[3].uri]["why"]
    assert "stage" in {t["term"] for t in staging["terms"]}  # the analyzer's stem of "staging"
    assert body["memories"] == 4 and body["allowed"] == 4 and "empty" not in body


async def test_filters_and_current(aiohttp_client, settings):
    reader, records = await start(aiohttp_client, settings)
    cases = [
        ({"current": True}, {1, 2, 3}),
        ({"anyTags": ["current", "ops"]}, {1, 3}),
        ({"excludeTags": ["db"]}, {3}),
        ({"where": {"env": {"prefix": "stag"}, "version": {"gte": 15}}}, {0, 1}),
        ({"where": {"env": {"in": ["prod"]}}}, {2}),
        ({"until": "2026-02-15T00:00:00.000Z", "since": "2026-02-01T00:00:00.000Z"}, {1}),
        ({"tags": ["db"], "current": True}, {1, 2}),
    ]
    for case, expected in cases:
        body = await (await recall(reader, **case)).json()
        assert {h["memory"]["uri"] for h in body["hits"]} == {records[i].uri for i in expected}, case
    body = await (await recall(reader, current=True)).json()
    assert body["droppedSuperseded"] == 1
    body = await (await recall(reader, where={"env": "nowhere"})).json()
    assert body["hits"] == [] and body["empty"] == "filtered_out" and body["allowed"] == 0
    body = await (await recall(reader, minConfidence="1")).json()
    assert body["hits"] == [] and body["empty"] == "below_threshold"


async def test_bad_input_is_a_clear_400(aiohttp_client, settings):
    reader, _ = await start(aiohttp_client, settings)
    for body, name in [
        ({"where": {"env": {"like": "x"}}}, "InvalidFilter"),
        ({"where": "env=staging"}, "InvalidRequest"),
        ({"until": "yesterday"}, "InvalidRequest"),
        ({"mode": "magic"}, "InvalidMode"),
        ({"minConfidence": "2"}, "InvalidRequest"),
        ({"limit": 51}, "InvalidRequest"),
        ({"anyTags": [str(i) for i in range(17)]}, "InvalidRequest"),
    ]:
        r = await recall(reader, **body)
        assert r.status == 400 and (await r.json())["error"] == name, body
    r = await reader.post(NSID, {"space": reader.space})
    assert r.status == 400 and (await r.json())["error"] == "InvalidRequest"


async def test_searchmemories_auth_applies(aiohttp_client, settings):
    reader, _ = await start(aiohttp_client, settings)
    r = await reader.client.post(f"/xrpc/{NSID}", json={"space": reader.space, "q": Q})
    assert r.status == 401 and (await r.json())["error"] == "AuthRequired"
    r = await reader.post(
        NSID, {"space": reader.space, "q": Q}, space=reader.space.replace("recall", "other")
    )
    assert r.status == 401  # a credential for another space does not open this one
    unknown = reader.space.replace("recall", "nowhere")
    r = await reader.post(NSID, {"space": unknown, "q": Q})
    assert r.status == 400 and (await r.json())["error"] == "UnknownSpace"
    other = await reader.ctx.services.spaces.create_hosted("foreign", model=MODEL)
    r = await reader.post(NSID, {"space": other.uri, "q": Q})
    assert r.status == 400 and (await r.json())["error"] == "ModelNotHosted"
