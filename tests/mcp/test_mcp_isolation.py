"""Isolation over /mcp: a key for tenant A never recalls, gets, lists or forgets anything of tenant B,
whatever the tool arguments name (B's space ids, names and URIs, B's memory URIs, junk). Property-tested
through the real HTTP transport with the SDK's client."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.shared.exceptions import MCPError
from support.mcp import serve

A_TEXTS = ["alpha ledger entry about harbour cranes", "alpha note on crane maintenance schedules"]
B_TEXTS = ["bravo secret about harbour cranes", "bravo private crane maintenance budget"]
WORDS = ["harbour", "cranes", "crane", "maintenance", "alpha", "bravo", "secret", "budget"]


@pytest.fixture
async def tenants(aiohttp_server, settings):
    served = await serve(aiohttp_server, replace(settings, text_search_rate=1000.0, text_search_burst=1000))
    a1, a2, b1 = await served.space("a-one"), await served.space("a-two"), await served.space("b-one")
    a_records = await served.write(a1, A_TEXTS[:1]) + await served.write(a2, A_TEXTS[1:])
    b_records = await served.write(b1, B_TEXTS)
    token_a, key_a = await served.key(a1, a2)
    _, key_b = await served.key(b1)
    b_short = next(short for short, uri in key_b.spaces.items() if uri == b1)
    foreign_spaces = [b_short, "b-one", b1]
    own_spaces = [*key_a.spaces, "a-one", a2]
    return (
        served,
        token_a,
        own_spaces,
        foreign_spaces,
        [r.uri for r in a_records],
        [r.uri for r in b_records],
        b1,
    )


def spaces_arg(own, foreign):
    return st.one_of(st.none(), st.sampled_from([*own, *foreign, "0", "x", "at://did:web:x/space/y/z"]))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
async def test_a_key_never_reaches_another_tenant_whatever_the_arguments(tenants, data):
    served, token_a, own, foreign, a_uris, b_uris, b_space = tenants
    space = data.draw(spaces_arg(own, foreign))
    spaces = data.draw(st.one_of(st.none(), st.lists(st.sampled_from([*own, *foreign]), max_size=3)))
    uri = data.draw(st.sampled_from([*a_uris, *b_uris, b_uris[0] + "x", "at://junk"]))
    query = " ".join(data.draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)))
    mode = data.draw(st.sampled_from(["vector", "hybrid", "keyword"]))
    async with served.client(token_a) as client:
        answers = [
            await client.call_tool(
                "recall", {"query": query, "space": space, "spaces": spaces, "mode": mode}
            ),
            await client.call_tool("list_memories", {"space": space}),
            await client.call_tool("get_memory", {"uri": uri}),
            await client.call_tool("forget", {"uri": data.draw(st.sampled_from(b_uris))}),
            await client.call_tool("list_spaces", {}),
        ]
        resource = None
        if uri in b_uris:
            try:
                resource = await client.read_resource(uri)
            except MCPError as exc:  # refused as an unknown resource: the wanted outcome
                resource = str(exc)
    for answer in answers:
        shown = str(answer.structured_content) + " ".join(getattr(c, "text", "") for c in answer.content)
        # B's texts and memory URIs never show up (an error may echo the space the caller itself named).
        assert "bravo" not in shown and not any(u in shown for u in b_uris), shown
    assert answers[3].is_error and "MemoryNotFound" in answers[3].content[0].text
    assert resource is None or isinstance(resource, str) and "bravo" not in resource
    remaining, _ = await served.ctx.services.memories.list(b_space)
    assert sorted(m.text for m in remaining) == sorted(B_TEXTS)
