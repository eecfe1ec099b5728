"""What /mcp answers before the SDK's transport sees a request (engram/mcp/envelope.py, engram/mcp/http.py):
an unknown protocol version is a 400, a refused initialize opens no session, and a malformed JSON-RPC
envelope is -32600 Invalid Request without the request's content in the answer, over real HTTP."""

from __future__ import annotations

import httpx2
import pytest
from mcp.shared.exceptions import MCPError
from support.mcp import ACCEPT, INIT, error_of

from engram.store import memory_reads

LISTING = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


async def _sessions(served) -> int:
    return await served.ctx.store.read(lambda c: c.execute("SELECT COUNT(*) FROM mcp_sessions").fetchone()[0])


async def _open(http, auth) -> dict[str, str]:
    opened = await http.post("/mcp", json=INIT, headers=auth)
    assert opened.status_code == 200, opened.text
    return {**auth, "Mcp-Session-Id": opened.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-06-18"}


async def test_an_unknown_protocol_version_is_a_400_whatever_the_method(served):
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(base_url=served.base, headers=ACCEPT) as http:
        session = await _open(http, auth)
        for version in ("garbage", "1999-01-01", "2025-06-19"):
            for method in ("POST", "GET", "DELETE"):
                answer = await http.request(
                    method, "/mcp", json=LISTING if method == "POST" else None,
                    headers={**session, "Mcp-Protocol-Version": version},
                )  # fmt: skip
                assert answer.status_code == 400, (version, method, answer.text)
                assert "Unsupported protocol version" in answer.json()["error"]["message"]
        # the session is untouched: a known version still reaches it
        assert (await http.post("/mcp", json=LISTING, headers=session)).status_code == 200


async def test_a_refused_initialize_opens_no_session_and_a_session_is_initialized_once(served):
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(base_url=served.base, headers=ACCEPT) as http:
        before = await _sessions(served)
        for body in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize"},
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
            {"jsonrpc": "2.0", "method": "initialize", "params": INIT["params"]},  # a notification
            {"jsonrpc": "1.0", "id": 1, "method": "initialize", "params": INIT["params"]},
        ):
            answer = await http.post("/mcp", json=body, headers=auth)
            assert answer.status_code == 400, answer.text
            assert "mcp-session-id" not in answer.headers
            assert answer.json()["error"]["code"] in (-32600, -32602)
        assert await _sessions(served) == before
        session = await _open(http, auth)
        again = await http.post("/mcp", json=INIT, headers=session)
        assert again.status_code == 400 and again.json() == {
            "jsonrpc": "2.0", "id": 1,
            "error": {"code": -32600, "message": "Invalid Request: this session is already initialized"},
        }  # fmt: skip


async def test_malformed_envelopes_are_invalid_requests_that_echo_nothing_and_write_nothing(served):
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    remember = {"name": "remember", "arguments": {"text": "secret-probe-text"}}
    async with httpx2.AsyncClient(base_url=served.base, headers=ACCEPT) as http:
        session = await _open(http, {"Authorization": f"Bearer {token}"})
        bodies = [
            [{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": remember}],  # a batch
            {"jsonrpc": "1.0", "id": 3, "method": "tools/call", "params": remember},
            {"id": 3, "method": "tools/call", "params": remember},
            {"jsonrpc": "2.0", "id": None, "method": "tools/call", "params": remember},
            {"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/call", "params": remember},
            {"jsonrpc": "2.0", "id": True, "method": "tools/call", "params": remember},
            {"jsonrpc": "2.0", "id": 3, "method": 7, "params": remember},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": ["secret-probe-text"]},
            {"jsonrpc": "2.0", "id": 3},
            42,
        ]
        for body in bodies:
            answer = await http.post("/mcp", json=body, headers=session)
            assert answer.status_code == 400, (body, answer.text)
            error = answer.json()["error"]
            assert error["code"] == -32600 and error["message"].startswith("Invalid Request"), error
            assert "secret-probe-text" not in answer.text and "pydantic" not in answer.text
        space = await served.ctx.services.spaces.find(notes)
        count = await served.ctx.store.read(lambda c: len(memory_reads.export_batch(c, space.uri, 0, 10)))
        assert count == 0
        # a body that is not JSON is still the SDK's parse error, and the session still works
        parse = await http.post(
            "/mcp", content=b"{nope", headers={**session, "Content-Type": "application/json"}
        )
        assert parse.status_code == 400 and parse.json()["error"]["code"] == -32700
        assert (await http.post("/mcp", json=LISTING, headers=session)).status_code == 200


async def test_tool_arguments_are_held_to_the_published_schema_and_a_refusal_writes_nothing(served):
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    async with served.client(token) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert all(t.input_schema.get("additionalProperties") is False for t in tools.values())
        typo = error_of(await client.call_tool("remember", {"text": "probe one", "tag": ["x"]}))
        assert typo == "InvalidRequest: tag: not an argument of this tool", typo
        for arguments, expected in (
            ({"query": "x", "limit": "5"}, "limit: must be integer"),
            ({"query": "x", "limit": True}, "limit: must be integer"),
            ({"query": "x", "current": "yes"}, "current: must be boolean"),
            ({"query": 7}, "query: must be string"),
        ):
            text = error_of(await client.call_tool("recall", arguments))
            assert text.startswith("InvalidRequest: ") and expected in text, (arguments, text)
        prompt = await client.get_prompt("use_memory")
        assert prompt.messages
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("use_memory", {"x": "caller-value"})
        assert refused.value.code == -32602 and "caller-value" not in refused.value.error.message
    space = await served.ctx.services.spaces.find(notes)
    assert await served.ctx.store.read(lambda c: memory_reads.export_batch(c, space.uri, 0, 10)) == []
