"""One set of filter and supersession cases through every door: MCP recall, XRPC garden.engram.recallMemories
(signed as searchMemories is), the service call the console makes (engram/console/pages/space.py), the
GPTBots match, Memory Bank's query and Sim's memory routes. Each case must bring back the same memories, with
the same supersession marks, on every door that can express it; a door whose upstream API has no spelling
for a case says so here, per case, with the reason (docs/compat.md), and the reason is checked against the
door's published API so that it cannot go stale silently."""

from __future__ import annotations

import json
from importlib import resources

import httpx2
from support.hosted_reader import hosted_reader_headers
from support.mcp import result_of

from engram.compat.gptbots.openapi import openapi as gptbots_openapi
from engram.compat.sim.openapi import openapi as sim_openapi
from engram.service.filter_spec import parse_where
from engram.service.hybrid import Scope, TextSearch

Q = "release notes for the deploy pipeline"
NOTES = [
    ("Release 1: the deploy pipeline uses Jenkins.", ("ci",), {"team": "infra", "release": 1}),
    ("Release 2: the deploy pipeline moved to GitHub Actions.", ("ci", "current"), {"team": "infra", "release": 2}),
    ("Release notes live in docs/releases for the web app.", ("docs",), {"team": "web", "release": 2}),
    ("The deploy pipeline pages on-call when a release fails.", ("ops",), {"team": "ops", "release": 3}),
]  # fmt: skip
CASES = [
    {},
    {"tags": ["ci"]},
    {"any_tags": ["docs", "ops"]},
    {"exclude_tags": ["ci"]},
    {"where": {"team": {"prefix": "inf"}}},
    {"where": {"release": {"gte": 2}}, "exclude_tags": ["docs"]},
    {"where": {"team": "infra"}, "current": True},
    {"current": True},
]
XRPC_NAMES = {"any_tags": "anyTags", "exclude_tags": "excludeTags"}  # the rest are spelled alike

# What each REST door's upstream request can say (docs/compat.md): GPTBots' match body, Memory Bank's
# query filter (the plugin's DocumentMetadataFilter), Sim's memory routes' parameters.
GPTBOTS_FIELDS = {
    "prompt",
    "top_k",
    "embedding_rate",
    "group_ids",
    "data_ids",
    "rerank_version",
    "doc_correlation",
}
BANK_FILTER = {"document_id", "source", "source_id", "author", "start_date", "end_date"}
BANK_SPELLING = {"since": "start_date", "until": "end_date"}  # the createdAt window (docs/memorybank.md)
NO_SEARCH = "Sim's memory block has no search: its routes read a conversation by key (docs/compat.md#sim-memory-block)"  # fmt: skip


def gptbots_cannot(case: dict) -> str | None:
    if case:
        return f"GPTBots' match body has no filter fields ({', '.join(sorted(case))}): docs/compat.md#gptbots-vector-match"  # fmt: skip
    return None


def sim_cannot(case: dict) -> str:
    return NO_SEARCH


def bank_cannot(case: dict) -> str | None:
    missing = sorted(set(case) - set(BANK_SPELLING))
    if missing:
        return f"Memory Bank's query filter has no {', '.join(missing)} (its fields: {', '.join(sorted(BANK_FILTER))})"
    return None


def test_the_reasons_hold_for_the_doors_published_apis():
    """The 'cannot express' reasons above are what the doors' own API documents say."""
    match = gptbots_openapi()["paths"]["/v1/vector/match"]["post"]["requestBody"]["content"][
        "application/json"
    ]
    assert set(match["schema"]["properties"]) == GPTBOTS_FIELDS
    bank = json.loads(resources.files("engram.compat.memorybank").joinpath("openapi.json").read_text())
    assert set(bank["components"]["schemas"]["DocumentMetadataFilter"]["properties"]) == BANK_FILTER
    sim = sim_openapi()["paths"]
    assert set(sim) == {"/api/memory", "/api/memory/{key}"}
    names = {p["name"] for path in sim.values() for op in path.values() for p in op.get("parameters", [])}
    filters = {
        "tags",
        "anyTags",
        "excludeTags",
        "where",
        "current",
        "since",
        "until",
        "author",
        "q",
        "prompt",
    }
    assert not names & filters  # `query` there is a LIKE pattern over conversation keys, not a search


async def test_every_door_agrees_on_filters_and_supersession(served):
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    written = []
    for text, tags, attrs in NOTES:
        written += await served.write(notes, [text], tags=tags, attrs=attrs)
    # the second release replaces the first, explicitly
    [update] = await served.write(
        notes, ["Release 2 follow-up: Jenkins is switched off."], tags=("ci",),
        attrs={"team": "infra", "release": 2, "supersedes": written[0].uri},
    )  # fmt: skip
    space = await served.ctx.services.spaces.require(notes)
    text_of = {r.uri: t for r, (t, _, _) in zip(written, NOTES, strict=True)}
    text_of[update.uri] = "Release 2 follow-up: Jenkins is switched off."

    async def console_call(case: dict) -> list[tuple[str, str | None]]:
        search = TextSearch(
            Q, limit=10, tags=tuple(case.get("tags", ())), tags_any=tuple(case.get("any_tags", ())),
            tags_none=tuple(case.get("exclude_tags", ())), attrs=parse_where(case.get("where")),
            current=case.get("current", False),
        )  # fmt: skip
        ranking = await served.ctx.services.ranking.run([Scope(space)], search, "hybrid")
        return [(h.memory.uri, h.replaced_by.uri if h.replaced_by else None) for h in ranking.hits]

    async with httpx2.AsyncClient(base_url=served.base) as http:

        async def xrpc_call(case: dict) -> list[tuple[str, str | None]]:
            body = {"space": notes, "q": Q, "limit": 10} | {XRPC_NAMES.get(k, k): v for k, v in case.items()}
            resp = await http.post(
                "/xrpc/garden.engram.recallMemories",
                json=body,
                headers=hosted_reader_headers(served.ctx, space),
            )
            assert resp.status_code == 200, resp.text
            return [
                (h["memory"]["uri"], (h.get("supersededBy") or {}).get("uri")) for h in resp.json()["hits"]
            ]

        async with served.client(token) as client:
            for case in CASES:
                found = result_of(await client.call_tool("recall", {"query": Q, "limit": 10, **case}))
                by_mcp = [(h["uri"], (h["supersededBy"] or {}).get("uri")) for h in found["results"]]
                assert by_mcp, case  # no case is vacuous
                assert by_mcp == await console_call(case), case
                assert by_mcp == await xrpc_call(case), case
                if case.get("current"):
                    assert written[0].uri not in [uri for uri, _ in by_mcp]
                elif not case or case.get("tags") == ["ci"]:
                    assert (written[0].uri, update.uri) in by_mcp  # marked, with its successor
                # The REST doors, per case: what each cannot say, and why. Memory Bank's queries see only
                # its own tenant's chunks, so its cases (unfiltered, dates) run on chunks it wrote, below.
                unsaid = {
                    "sim": sim_cannot(case),
                    "memorybank": bank_cannot(case) or "not Memory Bank's chunks: see the next test",
                    "gptbots": gptbots_cannot(case),
                }
                assert unsaid["sim"] and unsaid["memorybank"], case
                if case:
                    assert unsaid["gptbots"], case
                    continue
                resp = await http.post(
                    "/v1/vector/match", json={"prompt": Q, "top_k": 10, "embedding_rate": 0.5},
                    headers={"Authorization": f"Bearer {token}"},
                )  # fmt: skip
                assert resp.status_code == 200
                by_gptbots = [
                    (i["content"], (i["engram_superseded_by"] or {}).get("uri")) for i in resp.json()["list"]
                ]
                # GPTBots ranks with the fusion weight it was given (0.5): the same memories and marks, its order
                assert sorted(by_gptbots) == sorted((text_of[u], s) for u, s in by_mcp)


BANK_DOCS = [
    ("Deploy freeze notes: no deploys on Fridays after 15:00.", "2026-03-02T10:00:00Z"),
    ("Deploy pipeline notes: canary stage added before production.", "2026-04-10T10:00:00Z"),
    ("Deploy rollback notes: use the previous image tag.", "2026-05-20T10:00:00Z"),
]
BANK_CASES = [
    {},
    {"since": "2026-04-01T00:00:00Z"},
    {"until": "2026-04-30T00:00:00Z"},
    {"since": "2026-04-01T00:00:00Z", "until": "2026-04-30T00:00:00Z"},
    {"tags": ["ops"]},  # no Memory Bank spelling: said so below
]


async def test_memory_bank_dates_agree_with_every_door(served):
    """Memory Bank's date filter is engram's createdAt window: its chunks come back alike through MCP,
    XRPC, the console call and Memory Bank's own query (GPTBots has no filter, so only the unfiltered case;
    Sim has no search at all)."""
    bank = await served.space("bank")
    token, _ = await served.key(bank)
    auth = {"Authorization": f"Bearer {token}"}
    space = await served.ctx.services.spaces.require(bank)
    async with httpx2.AsyncClient(base_url=served.base) as http, served.client(token) as client:
        documents = [
            {"id": f"d{i}", "text": text, "user_id": "u1", "metadata": {"created_at": at}}
            for i, (text, at) in enumerate(BANK_DOCS)
        ]
        resp = await http.post("/memorybank/upsert", json={"documents": documents}, headers=auth)
        assert resp.status_code == 200, resp.text
        for case in BANK_CASES:
            found = result_of(
                await client.call_tool("recall", {"query": "deploy notes", "limit": 10, **case})
            )
            by_mcp = sorted(h["text"] for h in found["results"])
            body = {"space": bank, "q": "deploy notes", "limit": 10, **case}
            resp = await http.post(
                "/xrpc/garden.engram.recallMemories",
                json=body,
                headers=hosted_reader_headers(served.ctx, space),
            )
            assert sorted(h["memory"]["text"] for h in resp.json()["hits"]) == by_mcp, case
            search = TextSearch("deploy notes", limit=10, tags=tuple(case.get("tags", ())),
                                since=case.get("since"), until=case.get("until"))  # fmt: skip
            ranking = await served.ctx.services.ranking.run([Scope(space)], search, "hybrid")
            assert sorted(h.memory.text for h in ranking.hits) == by_mcp, case
            if case.get("tags"):
                assert by_mcp == [] and bank_cannot(case) is not None  # not a Memory Bank case: said so
                continue
            expected = [t for t, at in BANK_DOCS if case.get("since", "") <= at <= case.get("until", "9999")]
            assert by_mcp == sorted(expected), case
            assert bank_cannot(case) is None
            mb_filter = {BANK_SPELLING[k]: v for k, v in case.items()}
            query = {"query": "deploy notes", "user_id": "u1", "top_k": 10} | (
                {"filter": mb_filter} if mb_filter else {}
            )
            resp = await http.post("/memorybank/query", json={"queries": [query]}, headers=auth)
            assert resp.status_code == 200, resp.text
            assert sorted(c["text"] for c in resp.json()["results"][0]["results"]) == by_mcp, case
            assert sim_cannot(case)  # no search to ask
            if gptbots_cannot(case) is None:
                resp = await http.post(
                    "/v1/vector/match", json={"prompt": "deploy notes", "top_k": 10}, headers=auth
                )
                assert sorted(i["content"] for i in resp.json()["list"]) == by_mcp
