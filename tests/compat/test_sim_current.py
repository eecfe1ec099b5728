"""Sim's current generation (`workspaceId`): golden requests and answers, through a client built as
Sim's current tools are (sim_client.CurrentTools) and raw where the tools never go (docs/compat.md "Sim")."""

from __future__ import annotations

import pytest
from support.compat import bearer, start
from support.sim_client import CurrentTools, FirstGenerationTools

WS = "0c6b3c2e-7a0e-4d43-a3f4-5b1f7e9d2a10"  # Sim's workspace ids are UUIDs
WF = "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d"


@pytest.fixture
async def sim(aiohttp_client, settings):
    engram = await start(aiohttp_client, settings)
    space = await engram.space("sim-current")
    token, _ = await engram.key(space.uri)
    return engram, token


async def call(engram, token, method, path, status, **kw):
    resp = await engram.client.request(method, path, headers=bearer(token), **kw)
    body = await resp.json()
    assert resp.status == status, body
    return body


async def test_the_current_tools_round_trip_a_conversation(sim):
    engram, token = sim
    tools = CurrentTools(engram.client, token, workspace_id=WS)
    added = await tools.add("user", "I moved to Lisbon in May.", conversation_id="user-123")
    assert added.success and added.status == 200
    assert added.output == {"memories": [{"role": "user", "content": "I moved to Lisbon in May."}]}
    again = await tools.add("assistant", "Noted.", id="user-123")  # the legacy `id` parameter
    assert [m["role"] for m in again.output["memories"]] == ["user", "assistant"]
    got = await tools.get("user-123")
    assert got.output == {
        "memories": [{"conversationId": "user-123", "data": again.output["memories"]}],
        "message": "Found 1 memory",
    }
    listed = await tools.get_all()
    assert listed.output == {
        "memories": [{"conversationId": "user-123", "data": again.output["memories"]}],
        "message": "Found 1 memories",
    }
    deleted = await tools.delete("user-123")
    assert deleted.output == {"message": "Successfully deleted 1 memories"}
    assert (await tools.get("user-123")).output == {"memories": [], "message": "No memories found"}
    assert (await tools.get_all()).output == {"memories": [], "message": "No memories found"}
    assert (await tools.delete("user-123")).output == {"message": "No memories found matching the criteria"}


async def test_answers_have_the_current_shapes(sim):
    engram, token = sim
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi", "name": "dana"}]
    posted = await call(
        engram, token, "POST", "/api/memory", 200, json={"key": "k", "workspaceId": WS, "data": messages}
    )
    assert posted == {"success": True, "data": {"conversationId": "k", "data": messages}}  # extra fields kept
    missing = await call(engram, token, "GET", "/api/memory/nope", 200, params={"workspaceId": WS})
    assert missing == {"success": True, "data": None}  # not a 404 in this generation
    by_query = await call(
        engram, token, "DELETE", "/api/memory", 200, params={"workspaceId": WS, "conversationId": "k"}
    )
    assert by_query == {
        "success": True,
        "data": {"message": "Successfully deleted 1 memories", "deletedCount": 1},
    }
    await call(
        engram, token, "POST", "/api/memory", 200, json={"key": "k", "workspaceId": WS, "data": messages[0]}
    )
    by_key = await call(engram, token, "DELETE", "/api/memory/k", 200, params={"workspaceId": WS})
    assert by_key == {"success": True, "data": {"message": "Memory deleted successfully"}}
    gone = await call(engram, token, "DELETE", "/api/memory/k", 404, params={"workspaceId": WS})
    assert gone == {"success": False, "error": {"message": "Memory not found"}}


async def test_put_replaces_the_data_with_one_message_object(sim):
    engram, token = sim
    await call(
        engram,
        token,
        "POST",
        "/api/memory",
        200,
        json={
            "key": "k",
            "workspaceId": WS,
            "data": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
        },
    )
    put = await call(
        engram,
        token,
        "PUT",
        "/api/memory/k",
        200,
        json={"workspaceId": WS, "data": {"role": "assistant", "content": "summary", "x": 1}},
    )
    assert put == {
        "success": True,
        "data": {"conversationId": "k", "data": {"role": "assistant", "content": "summary"}},
    }
    got = await call(engram, token, "GET", "/api/memory/k", 200, params={"workspaceId": WS})
    assert got["data"]["data"] == {
        "role": "assistant",
        "content": "summary",
    }  # an object, as upstream stores it
    appended = await call(
        engram,
        token,
        "POST",
        "/api/memory",
        200,
        json={"key": "k", "workspaceId": WS, "data": {"role": "user", "content": "c"}},
    )
    assert appended["data"]["data"] == [
        {"role": "assistant", "content": "summary"},
        {"role": "user", "content": "c"},
    ]
    for body, message in [
        (
            {"workspaceId": WS, "data": {"role": "robot", "content": "x"}},
            "Invalid agent memory data: role: Role must be user, assistant, or system",
        ),
        (
            {"workspaceId": WS, "data": {"role": "user", "content": ""}},
            "Invalid agent memory data: content: Content is required",
        ),
        ({"workspaceId": WS, "data": "text"}, "Invalid request body: data: Invalid memory data structure"),
        (
            {"data": {"role": "user", "content": "x"}},
            "Invalid request body: workspaceId: Invalid input: expected string, received undefined",
        ),
    ]:
        payload = await call(engram, token, "PUT", "/api/memory/k", 400, json=body)
        assert payload == {"success": False, "error": {"message": message}}
    bad_json = await engram.client.put("/api/memory/k", data=b"{nope", headers=bearer(token))
    assert (bad_json.status, await bad_json.json()) == (
        400,
        {"success": False, "error": {"message": "Invalid JSON in request body"}},
    )
    # the existence check comes before the message check, as upstream
    missing = await call(
        engram, token, "PUT", "/api/memory/none", 404, json={"workspaceId": WS, "data": {"role": "robot"}}
    )
    assert missing["error"]["message"] == "Memory not found"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"workspaceId": WS, "data": {"role": "user", "content": "x"}}, "Memory key is required"),
        ({"key": "", "workspaceId": WS, "data": {"role": "user", "content": "x"}}, "Memory key is required"),
        ({"key": "k", "workspaceId": WS}, "Memory data is required"),
        (
            {"key": "k", "workspaceId": "", "data": {"role": "user", "content": "x"}},
            "workspaceId is required",
        ),
        (
            {"key": "k", "workspaceId": WS, "data": {"role": "robot", "content": "x"}},
            "Message role must be user, assistant, or system",
        ),
        (
            {"key": "k", "workspaceId": WS, "data": {"role": "user"}},
            "Memory requires messages with role and content",
        ),
        (
            {"key": "k", "workspaceId": WS, "data": ["just text"]},
            "Memory requires messages with role and content",
        ),
    ],
)
async def test_post_checks_are_the_routes_own(sim, body, message):
    engram, token = sim
    payload = await call(engram, token, "POST", "/api/memory", 400, json=body)
    assert payload == {"success": False, "error": {"message": message}}


async def test_what_the_contract_refuses_is_answered_in_the_parsers_shape(sim):
    engram, token = sim
    numeric = await call(
        engram,
        token,
        "POST",
        "/api/memory",
        400,
        json={"key": 7, "workspaceId": WS, "data": {"role": "user", "content": "x"}},
    )
    assert numeric == {
        "error": "Validation error",
        "details": [
            {
                "expected": "string",
                "code": "invalid_type",
                "path": ["key"],
                "message": "Invalid input: expected string, received number",
            }
        ],
    }
    nul = await call(
        engram,
        token,
        "POST",
        "/api/memory",
        400,
        json={"key": "k", "workspaceId": WS, "data": {"role": "user", "content": "a\x00"}},
    )
    assert nul["details"] == [
        {
            "code": "custom",
            "path": ["data", "content"],
            "message": "Value cannot contain a NUL character (U+0000)",
        }
    ]
    for limit, code in (("2abc", "invalid_type"), ("0", "too_small"), ("1.5", "invalid_type")):
        bad = await call(engram, token, "GET", "/api/memory", 400, params={"workspaceId": WS, "limit": limit})
        assert bad["error"] == "Validation error" and bad["details"][0]["code"] == code
    missing = await call(engram, token, "GET", "/api/memory", 400, params={"workspaceId": ""})
    assert missing["error"]["message"] == "workspaceId parameter is required"
    for method in ("GET", "DELETE"):
        empty = await call(engram, token, method, "/api/memory/k", 400, params={"workspaceId": ""})
        assert empty["error"]["message"] == "workspaceId: Invalid workspace ID format"
    no_conversation = await call(engram, token, "DELETE", "/api/memory", 400, params={"workspaceId": WS})
    assert no_conversation["error"]["message"] == "conversationId must be provided"
    no_workspace = await call(engram, token, "DELETE", "/api/memory", 400, params={"conversationId": "k"})
    assert no_workspace["error"]["message"] == "workspaceId parameter is required"


async def test_list_query_and_limit(sim):
    engram, token = sim
    for key in ("a%b", "axb", "a_b", "ab"):
        await call(
            engram,
            token,
            "POST",
            "/api/memory",
            200,
            json={"key": key, "workspaceId": WS, "data": {"role": "user", "content": key}},
        )

    async def keys(**params):
        got = await call(engram, token, "GET", "/api/memory", 200, params={"workspaceId": WS, **params})
        return [m["conversationId"] for m in got["data"]["memories"]]

    assert await keys(query="a_b") == ["a%b", "axb", "a_b"]
    assert await keys(query="a%b") == ["a%b", "axb", "a_b", "ab"]
    assert await keys(limit="2") == ["a%b", "axb"]
    assert await keys(limit=" 3 ") == ["a%b", "axb", "a_b"]


async def test_both_generations_side_by_side_chosen_by_the_requests_shape(sim):
    engram, token = sim
    first = FirstGenerationTools(engram.client, token, workflow_id=WF)
    current = CurrentTools(engram.client, token, workspace_id=WS)
    assert (await first.add("chat", "user", "from a workflow")).status == 201
    assert (await current.add("user", "from a workspace", conversation_id="chat")).success
    assert (await first.get("chat")).output["memories"] == [{"role": "user", "content": "from a workflow"}]
    assert (await current.get("chat")).output["memories"] == [
        {"conversationId": "chat", "data": [{"role": "user", "content": "from a workspace"}]}
    ]
    assert (await current.delete("chat")).success
    assert (await first.get_all()).output["memories"] == [
        {"key": "chat", "type": "agent", "data": [{"role": "user", "content": "from a workflow"}]}
    ]


def _nested(depth: int):
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


async def test_oversized_and_overnested_messages_are_400s_in_both_generations_and_write_nothing(sim):
    """A message is measured whole (its content and the fields riding along in attrs), and a content
    nested past what attrs may hold is refused before anything serialises it (orjson stops at 254)."""
    engram, token = sim
    big = "y" * 30_001
    current = {"key": "k", "workspaceId": WS}
    first = {"key": "k", "type": "agent", "workflowId": WF}
    bodies = [
        {**current, "data": {"role": "user", "content": "x", "blob": big}},
        {**current, "data": [{"role": "user", "content": "fine"}, {"role": "user", "content": "x", "blob": big}]},
        {**current, "data": {"role": "user", "content": _nested(300)}},
        {**current, "data": {"role": "user", "content": _nested(64)}},
        {**first, "data": {"role": "user", "content": "x", "blob": big}},
        {**first, "data": {"role": "user", "content": "x", "deep": _nested(300)}},
    ]  # fmt: skip
    for body in bodies:
        payload = await call(engram, token, "POST", "/api/memory", 400, json=body)
        assert payload["success"] is False and (
            "must be at most 30000 UTF-8 bytes" in payload["error"]["message"]
            or "nested at most 62 levels deep" in payload["error"]["message"]
        ), payload
    assert (await engram.ctx.store.read(lambda c: c.execute("SELECT COUNT(*) FROM memories").fetchone()))[
        0
    ] == 0
    # at the limits: a content of 62 levels, and a message of exactly 30,000 bytes with its fields
    fields = {"role": "user", "content": "x", "note": "n" * (30_000 - 1 - len('{"note":""}'))}
    for data in ({"role": "user", "content": _nested(62)}, fields):
        await call(engram, token, "POST", "/api/memory", 200, json={**current, "data": data})
