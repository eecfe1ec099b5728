"""Tenant isolation: whatever a body or query names (group_ids, data_ids, workflowId, memory ids), a key
only ever sees its own spaces and workflows. Property-tested over bodies mixing the key's own ids, another
key's ids and junk."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.compat import bearer, start

A_TEXTS = ["alpha ledger entry about harbour cranes", "alpha note on crane maintenance schedules"]
B_TEXTS = ["bravo secret about harbour cranes", "bravo private crane maintenance budget"]
WORDS = ["harbour", "cranes", "crane", "maintenance", "alpha", "bravo", "secret", "budget", "ledger"]


@pytest.fixture
async def tenants(aiohttp_client, settings):
    from dataclasses import replace

    engram = await start(aiohttp_client, replace(settings, text_search_rate=1000.0, text_search_burst=1000))
    a1, a2, b1 = await engram.space("a-one"), await engram.space("a-two"), await engram.space("b-one")
    await engram.write(a1.uri, A_TEXTS[:1])
    await engram.write(a2.uri, A_TEXTS[1:])
    b_records = await engram.write(b1.uri, B_TEXTS, attrs={"documentId": "b-doc"})
    token_a, key_a = await engram.key(a1.uri, a2.uri)
    token_b, key_b = await engram.key(b1.uri)
    for token, workflow, content in [(token_a, "wf-a", "alpha chat"), (token_b, "wf-b", "bravo chat secret")]:
        body = {
            "key": "chat",
            "type": "agent",
            "data": {"role": "user", "content": content},
            "workflowId": workflow,
        }
        assert (await engram.client.post("/api/memory", json=body, headers=bearer(token))).status == 201
    resp = await engram.client.get("/api/memory", params={"workflowId": "wf-b"}, headers=bearer(token_b))
    b_sim_id = (await resp.json())["data"]["memories"][0]["id"]
    foreign = {
        "groups": list(key_b.spaces),
        "docs": ["b-doc", *(r.rkey for r in b_records)],
        "workflows": ["wf-b"],
        "sim_keys": ["chat", b_sim_id],  # Sim's routes address conversations by key
        "token": token_b,
    }
    return engram, token_a, key_a, foreign


def ids(own, foreign):
    return st.one_of(st.none(), st.lists(st.sampled_from([*own, *foreign, "1", "0", "x"]), max_size=4))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
async def test_a_key_never_sees_another_keys_spaces_whatever_the_body_says(tenants, data):
    engram, token_a, key_a, foreign = tenants
    body = {
        "prompt": " ".join(data.draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))),
        "top_k": data.draw(st.integers(1, 50)),
        "embedding_rate": data.draw(st.sampled_from([0, 0.3, 0.5, 1, "0.7"])),
        "group_ids": data.draw(ids(list(key_a.spaces), foreign["groups"])),
        "data_ids": data.draw(ids([], foreign["docs"])),
        "user_id": data.draw(st.sampled_from([None, "b", "*"])),
        "workflowId": data.draw(st.sampled_from([None, "wf-b"])),
    }
    resp = await engram.client.post("/v1/vector/match", json=body, headers=bearer(token_a))
    payload = await resp.json()
    if resp.status == 400:
        assert payload["code"] == 40000 and any(g not in key_a.spaces for g in body["group_ids"] or ())
        return
    assert resp.status == 200, payload
    assert all(item["content"] not in B_TEXTS and "bravo" not in item["content"] for item in payload["list"])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
async def test_a_key_never_reads_or_deletes_another_keys_workflows(tenants, data):
    engram, token_a, _, foreign = tenants
    workflow = data.draw(st.sampled_from([*foreign["workflows"], "wf-a", "wf-x"]))
    query = data.draw(st.sampled_from([None, "", "chat", "c"]))
    params = {"workflowId": workflow, **({"query": query} if query is not None else {})}
    listed = await (await engram.client.get("/api/memory", params=params, headers=bearer(token_a))).json()
    assert all("bravo" not in m["content"] for row in listed["data"]["memories"] for m in row["data"])
    sim_key = data.draw(st.sampled_from(foreign["sim_keys"]))
    got = await engram.client.get(
        f"/api/memory/{sim_key}", params={"workflowId": workflow}, headers=bearer(token_a)
    )
    payload = await got.json()
    if got.status == 200:  # only A's own conversation "chat" of wf-a can be found
        assert (workflow, sim_key) == ("wf-a", "chat")
        assert all("bravo" not in m["content"] for m in payload["data"]["data"])
    else:
        assert got.status == 404
    if workflow != "wf-a":
        gone = await engram.client.delete(
            f"/api/memory/{sim_key}", params={"workflowId": workflow}, headers=bearer(token_a)
        )
        assert gone.status == 404
    b_row = await engram.client.get(
        "/api/memory/chat", params={"workflowId": "wf-b"}, headers=bearer(foreign["token"])
    )
    assert b_row.status == 200
