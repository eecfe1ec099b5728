"""One set of filter and supersession cases through every door that ranks with engram's pipeline: MCP
recall, the GPTBots match (which has no filter fields, so only the supersession cases: docs/compat.md) and
the service call the console makes (engram/console/pages/space.py). Each case must bring back the same
memories, with the same supersession marks, on every door that can express it."""

from __future__ import annotations

import httpx2
from support.mcp import result_of

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


async def test_mcp_gptbots_and_the_console_call_agree(served):
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

    async def console_call(case: dict) -> list[tuple[str, str | None]]:
        search = TextSearch(
            Q, limit=10, tags=tuple(case.get("tags", ())), tags_any=tuple(case.get("any_tags", ())),
            tags_none=tuple(case.get("exclude_tags", ())), attrs=parse_where(case.get("where")),
            current=case.get("current", False),
        )  # fmt: skip
        ranking = await served.ctx.services.ranking.run([Scope(space)], search, "hybrid")
        return [(h.memory.uri, h.replaced_by.uri if h.replaced_by else None) for h in ranking.hits]

    async with served.client(token) as client:
        for case in CASES:
            found = result_of(await client.call_tool("recall", {"query": Q, "limit": 10, **case}))
            by_mcp = [(h["uri"], (h["supersededBy"] or {}).get("uri")) for h in found["results"]]
            assert by_mcp == await console_call(case), case
            assert by_mcp, case  # no case is vacuous
            if case.get("current"):
                assert written[0].uri not in [uri for uri, _ in by_mcp]
            elif not case or case.get("tags") == ["ci"]:
                assert (written[0].uri, update.uri) in by_mcp  # marked, with its successor

    async with httpx2.AsyncClient(base_url=served.base, headers={"Authorization": f"Bearer {token}"}) as http:
        resp = await http.post("/v1/vector/match", json={"prompt": Q, "top_k": 10, "embedding_rate": 0.5})
        assert resp.status_code == 200
        by_gptbots = [
            (i["content"], (i["engram_superseded_by"] or {}).get("uri")) for i in resp.json()["list"]
        ]
    text_of = {r.uri: t for r, (t, _, _) in zip(written, NOTES, strict=True)}
    text_of[update.uri] = "Release 2 follow-up: Jenkins is switched off."
    # GPTBots ranks with the fusion weight it was given (0.5): compare the supersession marks, not the order
    assert (text_of[written[0].uri], update.uri) in by_gptbots
    assert {t for t, _ in by_gptbots} == set(text_of.values())
