"""Sim memory block routes: golden requests and responses (v1 shapes, statuses, tool outputs)."""

from __future__ import annotations

import pytest
from support.compat import bearer, start
from support.sim_client import FirstGenerationTools

from engram.service import apikeys

WF = "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d"  # Sim's workflow ids are UUIDs


@pytest.fixture
async def sim(aiohttp_client, settings):
    engram = await start(aiohttp_client, settings)
    space = await engram.space("sim")
    token, _ = await engram.key(space.uri)
    return engram, token, space


def add_body(key="chat-1", role="user", content="hello there", workflow=WF, **extra):
    return {
        "key": key,
        "type": "agent",
        "data": {"role": role, "content": content},
        "workflowId": workflow,
        **extra,
    }


async def call(engram, token, method, path, status, **kw):
    resp = await engram.client.request(method, path, headers=bearer(token), **kw)
    body = await resp.json()
    assert resp.status == status, body
    return body


async def test_create_is_201_then_append_is_200_with_the_whole_message_array(sim):
    engram, token, _ = sim
    created = await call(engram, token, "POST", "/api/memory", 201, json=add_body())
    row = created["data"]
    assert created["success"] is True
    assert row["id"].startswith("mem_") and len(row["id"]) == 36
    assert (row["workflowId"], row["key"], row["type"], row["deletedAt"]) == (WF, "chat-1", "agent", None)
    assert row["data"] == [{"role": "user", "content": "hello there"}]
    appended = await call(
        engram,
        token,
        "POST",
        "/api/memory",
        200,
        json=add_body(role="assistant", content="hi, how can I help?"),
    )
    assert appended["data"]["id"] == row["id"]
    assert appended["data"]["data"] == [
        {"role": "user", "content": "hello there"},
        {"role": "assistant", "content": "hi, how can I help?"},
    ]
    assert appended["data"]["createdAt"] == row["createdAt"] <= appended["data"]["updatedAt"]


async def test_each_append_answers_the_conversation_a_read_answers(sim):
    """An append answers the messages read before it plus the new one (engram/compat/sim/operations.py),
    not a second read of the whole conversation: the answer must still be what a read gives."""
    engram, token, _ = sim
    for n in range(5):
        role = "user" if n % 2 == 0 else "assistant"
        body = add_body(key="long", role=role, content=f"message {n}")
        answer = await call(engram, token, "POST", "/api/memory", 201 if n == 0 else 200, json=body)
        read = await call(engram, token, "GET", "/api/memory/long", 200, params={"workflowId": WF})
        assert answer["data"] == read["data"]
        assert [m["content"] for m in answer["data"]["data"]] == [f"message {i}" for i in range(n + 1)]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({**add_body(), "key": ""}, "Memory key is required"),
        ({**add_body(), "type": "raw"}, 'Memory type must be "agent"'),
        ({k: v for k, v in add_body().items() if k != "data"}, "Memory data is required"),
        ({**add_body(), "workflowId": None}, "workflowId is required"),
        ({**add_body(), "data": {"role": "user"}}, "Agent memory requires role and content"),
        (
            {**add_body(), "data": {"role": "robot", "content": "x"}},
            "Agent role must be user, assistant, or system",
        ),
    ],
)
async def test_validation_errors_are_400_in_sims_envelope_and_order(sim, body, message):
    engram, token, _ = sim
    payload = await call(engram, token, "POST", "/api/memory", 400, json=body)
    assert payload == {"success": False, "error": {"message": message}}


async def test_get_list_query_limit_order_and_delete(sim):
    engram, token, _ = sim
    for key in ("alpha-chat", "beta-chat", "alpha-notes"):
        await call(engram, token, "POST", "/api/memory", 201, json=add_body(key=key, content=f"about {key}"))
    listed = await call(engram, token, "GET", "/api/memory", 200, params={"workflowId": WF})
    assert [r["key"] for r in listed["data"]["memories"]] == ["alpha-chat", "beta-chat", "alpha-notes"]
    by_key = await call(engram, token, "GET", "/api/memory", 200, params={"workflowId": WF, "query": "alpha"})
    assert [r["key"] for r in by_key["data"]["memories"]] == ["alpha-chat", "alpha-notes"]
    by_content = await call(
        engram, token, "GET", "/api/memory", 200, params={"workflowId": WF, "query": "about"}
    )
    assert by_content["data"]["memories"] == []  # query matches the key, not the content
    limited = await call(engram, token, "GET", "/api/memory", 200, params={"workflowId": WF, "limit": "2"})
    assert len(limited["data"]["memories"]) == 2
    raw = await call(engram, token, "GET", "/api/memory", 200, params={"workflowId": WF, "type": "raw"})
    assert raw["data"]["memories"] == []
    first = listed["data"]["memories"][0]
    # Sim's routes address a conversation by its key: `eq(memory.key, id)` (docs/compat.md "Sim")
    got = await call(engram, token, "GET", "/api/memory/alpha-chat", 200, params={"workflowId": WF})
    assert got["data"] == first
    deleted = await call(engram, token, "DELETE", "/api/memory/alpha-chat", 200, params={"workflowId": WF})
    assert deleted == {"success": True, "data": {"message": "Memory deleted successfully"}}
    missing = await call(engram, token, "GET", "/api/memory/alpha-chat", 404, params={"workflowId": WF})
    assert missing == {"success": False, "error": {"message": "Memory not found"}}
    await call(engram, token, "DELETE", "/api/memory/alpha-chat", 404, params={"workflowId": WF})
    # the row id is not a key: nothing is found by it
    await call(engram, token, "GET", f"/api/memory/{first['id']}", 404, params={"workflowId": WF})


async def test_the_tools_of_the_first_generation_round_trip_a_conversation(sim):
    engram, token, _ = sim
    tools = FirstGenerationTools(engram.client, token, workflow_id=WF)
    key = "user 42/session: é&?"  # encodeURIComponent'd in the path, as get.ts and delete.ts do
    added = await tools.add(key, "user", "I moved to Lisbon in May.")
    assert added.success and added.status == 201
    assert added.output == {"memories": [{"role": "user", "content": "I moved to Lisbon in May."}]}
    again = await tools.add(key, "assistant", "Noted: Lisbon since May.")
    assert again.status == 200 and [m["role"] for m in again.output["memories"]] == ["user", "assistant"]
    got = await tools.get(key)
    assert got.success and got.output["memories"] == again.output["memories"]
    listed = await tools.get_all()
    assert listed.output["memories"] == [{"key": key, "type": "agent", "data": again.output["memories"]}]
    assert (await tools.delete(key)).output == {"message": "Memory deleted successfully."}
    gone = await tools.get(key)
    assert (gone.success, gone.status, gone.error) == (False, 404, "Memory not found")
    # the next add starts a new conversation instead of appending to the deleted one
    fresh = await tools.add(key, "user", "new start")
    assert fresh.status == 201 and fresh.output["memories"] == [{"role": "user", "content": "new start"}]


async def test_a_key_that_looks_like_a_row_id_or_holds_a_slash_is_still_a_key(sim):
    engram, token, _ = sim
    tools = FirstGenerationTools(engram.client, token, workflow_id=WF)
    for key in ("mem_0123456789abcdef0123456789abcdef", "a/b", "100%_sure"):
        assert (await tools.add(key, "user", f"text of {key}")).success
        assert (await tools.get(key)).output["memories"] == [{"role": "user", "content": f"text of {key}"}]


async def test_list_query_is_a_like_pattern_and_limit_is_parse_int(sim):
    engram, token, _ = sim
    for key in ("a%b", "axb", "a_b", "ab"):
        await call(engram, token, "POST", "/api/memory", 201, json=add_body(key=key))

    async def keys(**params):
        got = await call(engram, token, "GET", "/api/memory", 200, params={"workflowId": WF, **params})
        return [r["key"] for r in got["data"]["memories"]]

    assert await keys(query="a%b") == ["a%b", "axb", "a_b", "ab"]  # % is any run, also empty
    assert await keys(query="a_b") == ["a%b", "axb", "a_b"]  # _ is exactly one character
    assert await keys(query="a\\%b") == ["a%b"]  # a backslash escapes, as PostgreSQL's LIKE
    assert await keys(query="A") == []  # case-sensitive, as PostgreSQL
    assert await keys(limit="2abc") == ["a%b", "axb"]  # Number.parseInt("2abc") is 2
    assert await keys(limit=" 3") == ["a%b", "axb", "a_b"]
    assert await keys(limit="") == ["a%b", "axb", "a_b", "ab"]  # `limit || '50'`
    assert await keys(limit="0") == []
    bad = await call(engram, token, "GET", "/api/memory", 400, params={"workflowId": WF, "limit": "x"})
    assert bad["success"] is False


async def test_javascript_truthiness_decides_what_is_missing(sim):
    engram, token, _ = sim
    numeric = await call(engram, token, "POST", "/api/memory", 201, json=add_body(key=7))
    assert numeric["data"]["key"] == "7"  # a truthy key, stored as the text column holds it
    got = await call(engram, token, "GET", "/api/memory/7", 200, params={"workflowId": WF})
    assert got["data"]["id"] == numeric["data"]["id"]
    for falsy in (0, "", None, False):
        payload = await call(engram, token, "POST", "/api/memory", 400, json=add_body(key=falsy))
        assert payload["error"]["message"] == "Memory key is required"
    rich = {"role": "user", "content": {"text": "hi", "lang": "en"}, "name": "dana"}
    kept = await call(engram, token, "POST", "/api/memory", 201, json={**add_body(key="rich"), "data": rich})
    assert kept["data"]["data"] == [rich]  # the message object comes back as sent


async def test_missing_workflow_messages_are_each_routes_own(sim):
    engram, token, _ = sim
    listed = await call(engram, token, "GET", "/api/memory", 400)
    assert listed["error"]["message"] == "workflowId parameter is required"
    for method in ("GET", "DELETE"):
        missing = await call(engram, token, method, "/api/memory/chat-1", 400)
        assert missing["error"]["message"] == "workflowId: Expected string, received null"
        empty = await call(engram, token, method, "/api/memory/chat-1", 400, params={"workflowId": ""})
        assert empty["error"]["message"] == "workflowId: Invalid workflow ID format"
    posted = await call(engram, token, "POST", "/api/memory", 400, json=add_body(workflow=""))
    assert posted["error"]["message"] == "workflowId is required"


async def test_auth_is_required(sim):
    engram, _, _ = sim
    resp = await engram.client.get("/api/memory", params={"workflowId": WF})
    assert resp.status == 401 and (await resp.json())["success"] is False
    resp = await engram.client.post("/api/memory", json=add_body(), headers=bearer("engram_revoked"))
    assert resp.status == 401


async def test_a_read_key_cannot_write_and_revocation_is_immediate(sim):
    engram, _, space = sim
    reader, key = await engram.key(space.uri, scopes=("read",))
    assert (await call(engram, reader, "POST", "/api/memory", 403, json=add_body()))["success"] is False
    await call(engram, reader, "GET", "/api/memory", 200, params={"workflowId": WF})
    await apikeys.revoke_api_key(engram.ctx.store, key.id)
    await call(engram, reader, "GET", "/api/memory", 401, params={"workflowId": WF})


async def test_http_level_errors_keep_sims_envelope(sim):
    engram, token, _ = sim
    for resp in [
        await engram.client.patch("/api/memory/mem_1", headers=bearer(token)),
        await engram.client.get("/api/memory/a/b", headers=bearer(token)),
        await engram.client.post("/api/memory", data=b"nope", headers=bearer(token)),
    ]:
        body = await resp.json()
        assert resp.status in (400, 404, 405) and body["success"] is False and "message" in body["error"]


async def test_memories_with_partial_or_odd_sim_attrs_never_break_the_routes(sim):
    engram, token, space = sim
    await engram.write(space.uri, ["no sim id here"], attrs={"workflowId": WF, "conversationKey": "half"})
    await engram.write(
        space.uri,
        ["odd one"],
        attrs={
            "workflowId": WF,
            "conversationKey": "odd",
            "simId": "mem_odd",
            "sequence": "seven",
            "role": "robot",
        },
    )
    listed = await call(engram, token, "GET", "/api/memory", 200, params={"workflowId": WF})
    assert [(r["key"], r["data"]) for r in listed["data"]["memories"]] == [
        ("odd", [{"role": "user", "content": "odd one"}])
    ]  # the memory without a simId is not a Sim message
    appended = await call(engram, token, "POST", "/api/memory", 200, json=add_body(key="odd", content="more"))
    assert {m["content"] for m in appended["data"]["data"]} == {"odd one", "more"}
    await call(engram, token, "POST", "/api/memory", 201, json=add_body(key="half"))
