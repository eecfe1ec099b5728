"""Sim memory block routes: golden requests and responses (v1 shapes, statuses, tool outputs)."""

from __future__ import annotations

import pytest
from compat_support import bearer, start

from engram.compat.sim.translate import (
    tool_add_output,
    tool_delete_output,
    tool_error_output,
    tool_get_all_output,
    tool_get_output,
)
from engram.service import apikeys

WF = "wf-123"


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
    assert tool_add_output(appended) == {"success": True, "output": {"memories": appended["data"]["data"]}}


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
    assert tool_error_output(payload)["error"] == message


async def test_get_list_query_limit_order_and_delete(sim):
    engram, token, _ = sim
    for key in ("alpha-chat", "beta-chat", "alpha-notes"):
        await call(engram, token, "POST", "/api/memory", 201, json=add_body(key=key, content=f"about {key}"))
    listed = await call(engram, token, "GET", "/api/memory", 200, params={"workflowId": WF})
    assert [r["key"] for r in listed["data"]["memories"]] == ["alpha-chat", "beta-chat", "alpha-notes"]
    assert tool_get_all_output(listed)["output"]["memories"][0] == {
        "key": "alpha-chat",
        "type": "agent",
        "data": [{"role": "user", "content": "about alpha-chat"}],
    }
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
    got = await call(engram, token, "GET", f"/api/memory/{first['id']}", 200, params={"workflowId": WF})
    assert got["data"] == first
    assert tool_get_output(got)["output"]["memories"] == first["data"]
    deleted = await call(
        engram, token, "DELETE", f"/api/memory/{first['id']}", 200, params={"workflowId": WF}
    )
    assert deleted == {"success": True, "data": {"message": "Memory deleted successfully"}}
    assert tool_delete_output(deleted)["output"]["message"] == "Memory deleted successfully."
    missing = await call(engram, token, "GET", f"/api/memory/{first['id']}", 404, params={"workflowId": WF})
    assert missing == {"success": False, "error": {"message": "Memory not found"}}
    await call(engram, token, "DELETE", f"/api/memory/{first['id']}", 404, params={"workflowId": WF})


async def test_workflow_and_auth_are_required(sim):
    engram, token, _ = sim
    assert (await call(engram, token, "GET", "/api/memory", 400))["error"][
        "message"
    ] == "workflowId is required"
    await call(engram, token, "GET", "/api/memory/mem_x", 400)
    resp = await engram.client.get("/api/memory", params={"workflowId": WF})
    assert resp.status == 401 and (await resp.json())["success"] is False
    resp = await engram.client.post("/api/memory", json=add_body(), headers=bearer("engram_revoked"))
    assert resp.status == 401


async def test_a_read_key_cannot_write_and_revocation_is_immediate(sim):
    engram, _, space = sim
    reader, key = await engram.key(space.uri, scopes=("read",))
    assert (await call(engram, reader, "POST", "/api/memory", 403, json=add_body()))["success"] is False
    await call(engram, reader, "GET", "/api/memory", 200, params={"workflowId": WF})
    await apikeys.revoke_api_key(engram.ctx, key.id)
    await call(engram, reader, "GET", "/api/memory", 401, params={"workflowId": WF})


async def test_http_level_errors_keep_sims_envelope(sim):
    engram, token, _ = sim
    for resp in [
        await engram.client.put("/api/memory/mem_1", headers=bearer(token)),
        await engram.client.get("/api/memory/a/b", headers=bearer(token)),
        await engram.client.post("/api/memory", data=b"nope", headers=bearer(token)),
    ]:
        body = await resp.json()
        assert resp.status in (400, 404, 405) and body["success"] is False and "message" in body["error"]
