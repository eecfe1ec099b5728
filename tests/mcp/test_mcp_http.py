"""/mcp on a real port, driven by the SDK's own streamable-HTTP client: every tool, checked against the
service layer; bearer API keys (401 + resource_metadata challenge, revocation, scopes); a memory
remembered through MCP is found by signed searchMemories and by the GPTBots shim."""

from __future__ import annotations

import logging
from dataclasses import replace

import httpx2
import jsonschema
import pytest
from mcp.shared.exceptions import MCPError
from support.api import Reader
from support.mcp import ACCEPT, INIT, error_of, resource_json, result_of, serve

from engram.auth.crypto_keys import PrivateKey
from engram.service import apikeys
from engram.service.hybrid import Scope, TextSearch
from engram.service.search import SearchQuery
from engram.store import memory_reads

FACTS = [
    "Dana prefers pnpm over npm in the web-dashboard repository.",
    "Production Postgres runs version 16.2; staging is still on 15.4.",
    "The team's weekly sync moved from Monday to Tuesday at 10:00.",
]


async def test_every_tool_over_http_matches_the_service_layer(served):
    notes, shared = await served.space("notes"), await served.space("shared")
    token, key = await served.key(notes, shared)
    await served.write(shared, ["Henrik must approve every change to token handling."], tags=["auth"])
    async with served.client(token) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"remember", "recall", "get_memory", "list_memories", "forget", "list_spaces"}

        made = [result_of(await client.call_tool("remember", {"text": t, "tags": ["team"]})) for t in FACTS]
        assert [m["duplicate"] for m in made] == [False, False, False]
        again = result_of(await client.call_tool("remember", {"text": FACTS[0], "tags": ["team"]}))
        assert again["duplicate"] is True and again["uri"] == made[0]["uri"]
        stored = await served.ctx.services.memories.list(notes, limit=100)
        assert sorted(m.text for m in stored[0]) == sorted(FACTS)  # one copy each, in the primary space

        spaces = result_of(await client.call_tool("list_spaces", {}))["spaces"]
        by_uri = {s["uri"]: s for s in spaces}
        assert set(by_uri) == {notes, shared}
        assert by_uri[notes]["memories"] == 3 and by_uri[shared]["memories"] == 1
        assert by_uri[notes]["write"] and not by_uri[shared]["write"] and by_uri[notes]["default"]
        assert by_uri[notes]["model"]["name"] == served.ctx.embedder.name

        hits = result_of(await client.call_tool("recall", {"query": "postgres version", "mode": "vector"}))
        top = hits["results"][0]
        assert top["text"] == FACTS[1] and set(top) >= {"uri", "text", "tags", "createdAt", "similarity"}
        space = await served.ctx.services.spaces.find(notes)
        direct = await served.ctx.services.search.search(space, SearchQuery(q="postgres version", limit=10))
        assert top["uri"] == direct.hits[0][0].uri
        assert abs(top["similarity"] - direct.hits[0][1] / 1000) < 1e-3

        both = result_of(await client.call_tool("recall", {"query": "token handling approve", "limit": 3}))
        shared_id = next(short for short, uri in key.spaces.items() if uri == shared)
        assert both["results"][0]["space"] == shared_id and both["results"][0]["text"].startswith("Henrik")
        scopes = [Scope(await served.ctx.services.spaces.find(u)) for u in (notes, shared)]
        ranking = served.ctx.services.ranking  # the one engram-chosen ranking (engram/service/ranking.py)
        fused = (await ranking.run(scopes, TextSearch("token handling approve", 3), "hybrid")).hits
        assert [r["uri"] for r in both["results"]] == [h.memory.uri for h in fused]
        assert [r["score"] for r in both["results"]] == [round(h.score, 4) for h in fused]
        only_notes = result_of(
            await client.call_tool("recall", {"query": "token handling", "space": "notes"})
        )
        assert all(r["uri"].startswith(notes + "/") for r in only_notes["results"])
        tagged = result_of(await client.call_tool("recall", {"query": "approve", "tags": ["auth"]}))
        assert [r["text"][:6] for r in tagged["results"]] == ["Henrik"]

        got = result_of(await client.call_tool("get_memory", {"uri": made[2]["uri"]}))
        assert got["text"] == FACTS[2] and got["tags"] == ["team"]
        assert resource_json(await client.read_resource(made[2]["uri"]))["text"] == FACTS[2]

        page = result_of(await client.call_tool("list_memories", {"limit": 2}))
        assert len(page["memories"]) == 2 and page["cursor"]
        rest = result_of(await client.call_tool("list_memories", {"limit": 2, "cursor": page["cursor"]}))
        assert {m["text"] for m in page["memories"] + rest["memories"]} == set(FACTS)
        assert result_of(await client.call_tool("list_memories", {"space": "shared"}))["memories"][0][
            "tags"
        ] == ["auth"]

        assert result_of(await client.call_tool("forget", {"uri": made[0]["uri"]}))["deleted"] is True
        gone = await served.ctx.store.read(memory_reads.get_memory, notes, made[0]["uri"])
        assert gone is None
        shared_uri = (await served.ctx.services.memories.list(shared))[0][0].uri
        assert "ReadOnlySpace" in error_of(await client.call_tool("forget", {"uri": shared_uri}))
        assert (await served.ctx.services.memories.get(shared, shared_uri)).text.startswith("Henrik")

        prompt = await client.get_prompt("use_memory")
        assert "recall" in prompt.messages[0].content.text


async def test_remembered_through_mcp_is_found_by_signed_search_and_the_gptbots_shim(served):
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    async with served.client(token) as client:
        made = result_of(await client.call_tool("remember", {"text": FACTS[1], "source": "ops-chat"}))
    async with httpx2.AsyncClient(base_url=served.base) as http:

        class _Client:  # Reader's signed GET over this real port
            async def get(self, path, params=None, headers=None):
                return await http.get(path, params=params, headers=headers)

        reader = Reader(_Client(), served.ctx, notes, PrivateKey.generate("ES256"))
        found = await reader.search(q="which postgres version runs in production", limit=3)
        assert found.status_code == 200, found.text
        assert found.json()["memories"][0]["uri"] == made["uri"]
        match = await http.post(
            "/v1/vector/match",
            json={"prompt": "postgres production version", "top_k": 3},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert match.status_code == 200, match.text
        assert match.json()["list"][0]["content"] == FACTS[1]


async def test_no_or_bad_credential_gets_the_oauth_challenge(served):
    metadata = f"{served.base}/.well-known/oauth-protected-resource/mcp"
    async with httpx2.AsyncClient(base_url=served.base) as http:
        bare = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert bare.status_code == 401
        assert bare.headers["www-authenticate"] == f'Bearer resource_metadata="{metadata}"'
        assert "invalid_token" not in bare.text  # nothing was presented: no error code (RFC 6750)
        bad = await http.post("/mcp", json={}, headers={"Authorization": "Bearer engram_not-a-key"})
        assert bad.status_code == 401 and 'error="invalid_token"' in bad.headers["www-authenticate"]
        assert bad.json()["error"] == "invalid_token"
        prm = (await http.get("/.well-known/oauth-protected-resource/mcp")).json()
        assert prm["resource"] == served.mcp_url and prm["authorization_servers"] == [
            f"{served.base}/oauth/mcp"
        ]
        asm = (await http.get("/.well-known/oauth-authorization-server/oauth/mcp")).json()
        assert asm["issuer"] == f"{served.base}/oauth/mcp" and asm["code_challenge_methods_supported"] == [
            "S256"
        ]
        assert asm["registration_endpoint"] == f"{served.base}/oauth/mcp/register"


async def test_a_revoked_key_stops_at_the_next_request_and_scopes_hold(served):
    notes = await served.space("notes")
    reader_token, reader_key = await served.key(notes, scopes=("read",))
    writer_token, _ = await served.key(notes, scopes=("write",))
    async with served.client(writer_token) as client:
        result_of(await client.call_tool("remember", {"text": FACTS[0]}))
        assert "InsufficientScope" in error_of(await client.call_tool("recall", {"query": "pnpm"}))
    async with served.client(reader_token) as client:
        assert (
            result_of(await client.call_tool("recall", {"query": "pnpm"}))["results"][0]["text"] == FACTS[0]
        )
        assert "InsufficientScope" in error_of(await client.call_tool("remember", {"text": "nope"}))
        uri = (await served.ctx.services.memories.list(notes))[0][0].uri
        assert "ReadOnlySpace" in error_of(await client.call_tool("forget", {"uri": uri}))
        await apikeys.revoke_api_key(served.ctx.store, reader_key.id)
        with pytest.raises(MCPError):  # the session's next request is refused (401) mid-session
            await client.call_tool("recall", {"query": "pnpm"})
    async with httpx2.AsyncClient(base_url=served.base) as http:
        refused = await http.post("/mcp", json={}, headers={"Authorization": f"Bearer {reader_token}"})
        assert refused.status_code == 401
    assert len((await served.ctx.services.memories.list(notes))[0]) == 1


async def test_bad_arguments_are_tool_errors_not_crashes(served):
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    async with served.client(token) as client:
        assert "InvalidUri" in error_of(await client.call_tool("get_memory", {"uri": "not a uri"}))
        assert "InvalidMode" in error_of(await client.call_tool("recall", {"query": "x", "mode": "psychic"}))
        assert error_of(await client.call_tool("remember", {"text": "x" * 30001}))
        assert "UnknownSpace" in error_of(await client.call_tool("list_memories", {"space": "nope"}))
        assert "InvalidRequest" in error_of(
            await client.call_tool("recall", {"query": "x", "since": "yesterday"})
        )
        # The model reads `Name: message` and nothing else: no SDK prefix, no pydantic report or link.
        too_long = error_of(await client.call_tool("remember", {"text": "x" * 30001}))
        assert too_long.startswith("InvalidRequest: text: ") and "pydantic" not in too_long
        assert "x" * 100 not in too_long  # never the value sent
        missing = error_of(await client.call_tool("recall", {}))
        assert missing == "InvalidRequest: query: Field required", missing
        unknown = error_of(await client.call_tool("list_memories", {"space": "nope"}))
        assert unknown.startswith("UnknownSpace: 'nope' is not one of your spaces")


async def test_unknown_tools_prompts_and_resources_are_protocol_errors_with_the_spec_codes(served):
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    async with served.client(token) as client:
        with pytest.raises(MCPError) as tool:
            await client.call_tool("teleport", {})
        assert tool.value.code == -32602
        with pytest.raises(MCPError) as prompt:
            await client.get_prompt("no_such_prompt")
        assert prompt.value.code == -32602
        with pytest.raises(MCPError) as resource:
            await client.read_resource(notes + "/garden.engram.memory/3zzzzzzzzzzzz")
        assert resource.value.code == -32002 and "MemoryNotFound" in resource.value.error.message


async def test_tools_declare_their_hints_and_the_schema_of_their_answers(served):
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    async with served.client(token) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        reads = {"recall", "get_memory", "list_memories", "list_spaces"}
        assert {n for n, t in tools.items() if t.annotations.read_only_hint} == reads
        assert tools["forget"].annotations.destructive_hint is True
        assert tools["remember"].annotations.destructive_hint is False
        assert tools["remember"].annotations.idempotent_hint and tools["forget"].annotations.idempotent_hint
        made = result_of(await client.call_tool("remember", {"text": FACTS[0], "tags": ["team"]}))
        answers = {
            "remember": made,
            "recall": result_of(await client.call_tool("recall", {"query": "pnpm"})),
            "get_memory": result_of(await client.call_tool("get_memory", {"uri": made["uri"]})),
            "list_memories": result_of(await client.call_tool("list_memories", {})),
            "list_spaces": result_of(await client.call_tool("list_spaces", {})),
            "forget": result_of(await client.call_tool("forget", {"uri": made["uri"]})),
        }
        for name, answer in answers.items():
            schema = tools[name].output_schema
            assert schema["type"] == "object" and schema.get("additionalProperties") is not True
            jsonschema.validate(answer, schema)  # every field the answer has, typed as it is
            assert set(answer) == set(schema["properties"]) == set(schema["required"])


async def test_query_text_never_reaches_the_logs_even_at_debug(served, caplog):
    caplog.set_level(logging.DEBUG)
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    secret = "zebra-quartz-lighthouse"
    async with served.client(token) as client:
        result_of(await client.call_tool("recall", {"query": f"where is the {secret}"}))
        error_of(await client.call_tool("recall", {"query": f"{secret} " * 300}))  # too long: refused
        error_of(await client.call_tool("recall", {"query": secret, "mode": secret}))
    assert caplog.records and secret not in caplog.text


async def test_recall_spends_the_keys_text_budget_not_the_spaces(aiohttp_server, settings):
    limits = {"key_text_search_rate": 0.001, "key_text_search_burst": 2}
    served = await serve(
        aiohttp_server, replace(settings, text_search_rate=0.001, text_search_burst=1, **limits)
    )
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    other_token, _ = await served.key(notes)
    async with served.client(token) as client:
        for _ in range(2):  # more than the space's burst of 1: the key pays, not the space
            result_of(await client.call_tool("recall", {"query": "pnpm", "mode": "vector"}))
        refused = error_of(await client.call_tool("recall", {"query": "pnpm", "mode": "vector"}))
        assert refused.startswith("RateLimitExceeded: too many text searches for this API key")
    async with served.client(other_token) as client:  # another key of the same space has its own
        result_of(await client.call_tool("recall", {"query": "pnpm", "mode": "vector"}))


def modern_call(request_id: int, name: str, arguments: dict) -> tuple[dict, dict]:
    """A raw 2026-revision `tools/call` as the SDK's client sends it: (headers, body)."""
    version = "2026-07-28"
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    headers = {**ACCEPT, "MCP-Protocol-Version": version, "Mcp-Method": "tools/call", "Mcp-Name": name}
    params = {"name": name, "arguments": arguments, "_meta": meta}
    return headers, {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


@pytest.mark.parametrize("revision", ["2026-07-28", "2025-06-18"])
async def test_a_recall_past_the_keys_budget_is_refused_as_the_sdk_refuses(
    aiohttp_server, settings, caplog, revision
):
    """A flood's refusals skip the SDK's transport (engram/mcp/refusal.py); the answer is the one the SDK
    gives any failed tool call, byte for byte (a JSON body for the 2026 revision, an event in a session
    for 2025), and only a recall that would embed is answered early."""
    limits = {"key_text_search_rate": 0.001, "key_text_search_burst": 1}
    served = await serve(aiohttp_server, replace(settings, **limits))
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(base_url=served.base) as http:
        session = {}
        if revision.startswith("2025"):
            opened = await http.post("/mcp", json=INIT, headers={**ACCEPT, **auth})
            session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": revision}

        async def call(request_id: int, arguments: dict) -> httpx2.Response:
            headers, body = modern_call(request_id, "recall", arguments)
            if session:  # the 2025 revision: no envelope in the body, the session's headers instead
                body["params"].pop("_meta")
                headers = {**ACCEPT, **session}
            return await http.post("/mcp", json=body, headers={**headers, **auth})

        spent = await call(1, {"query": "pnpm", "mode": "vector"})  # the key's only token
        assert spent.status_code == 200 and '"isError":false' in spent.text, spent.text
        caplog.set_level(logging.INFO, logger="mcp")
        refused = await call(2, {"query": "pnpm", "mode": "vector"})
        # A bad mode fails in the tool, through the SDK: the same envelope around another text.
        invalid = await call(2, {"query": "pnpm", "mode": "sideways"})
        keyword = await call(3, {"query": "pnpm", "mode": "keyword"})  # embeds nothing: still answered
    refusal = "RateLimitExceeded: too many text searches for this API key; retry later"
    invalid_text = "InvalidMode: mode must be one of vector, hybrid, keyword"
    assert invalid_text in invalid.text and '"isError":true' in invalid.text, invalid.text
    assert refused.content == invalid.content.replace(invalid_text.encode(), refusal.encode())
    assert refused.status_code == invalid.status_code == 200
    for name in ("content-type", "cache-control", "x-accel-buffering", "mcp-session-id"):
        assert refused.headers.get(name) == invalid.headers.get(name), name
    # The SDK logs each failed tool call it ran; the refused one never reached it.
    failures = [r.getMessage() for r in caplog.records if r.name.startswith("mcp")]
    assert any("InvalidMode" in m for m in failures) and not any("RateLimitExceeded" in m for m in failures)
    assert '"isError":false' in keyword.text, keyword.text


async def test_a_session_answers_only_the_key_that_opened_it(served):
    notes = await served.space("notes")
    token_a, _ = await served.key(notes)
    token_b, _ = await served.key(notes)
    async with httpx2.AsyncClient(base_url=served.base, headers=ACCEPT) as http:
        opened = await http.post("/mcp", json=INIT, headers={"Authorization": f"Bearer {token_a}"})
        assert opened.status_code == 200, opened.text
        session = opened.headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        ours = {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18"}
        stolen = await http.post("/mcp", json=listing, headers={**ours, "Authorization": f"Bearer {token_b}"})
        assert stolen.status_code == 404
        own = await http.post("/mcp", json=listing, headers={**ours, "Authorization": f"Bearer {token_a}"})
        assert own.status_code in (200, 202), own.text


async def test_a_2025_protocol_client_gets_event_streams_through_the_bridge(served):
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    async with served.client(token, mode="legacy") as client:
        assert client.protocol_version.startswith("2025-")
        made = result_of(await client.call_tool("remember", {"text": FACTS[2]}))
        hits = result_of(await client.call_tool("recall", {"query": "weekly sync day", "mode": "vector"}))
        assert hits["results"][0]["uri"] == made["uri"]


async def test_a_key_opening_sessions_in_a_loop_ends_only_its_own_oldest(aiohttp_server, settings):
    served = await serve(aiohttp_server, replace(settings, mcp_sessions_per_key=3))
    notes = await served.space("notes")
    flood_token, _ = await served.key(notes, scopes=("read",))
    quiet_token, _ = await served.key(notes)
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}

    async def open_session(http, token: str) -> dict:
        opened = await http.post("/mcp", json=INIT, headers={"Authorization": f"Bearer {token}"})
        assert opened.status_code == 200, opened.text
        return {
            "Authorization": f"Bearer {token}",
            "Mcp-Session-Id": opened.headers["mcp-session-id"],
            "MCP-Protocol-Version": "2025-06-18",
        }

    async with httpx2.AsyncClient(base_url=served.base, headers=ACCEPT) as http:
        quiet = await open_session(http, quiet_token)
        flood = [await open_session(http, flood_token) for _ in range(8)]
        statuses = [(await http.post("/mcp", json=ping, headers=h)).status_code for h in flood]
        assert statuses == [404] * 5 + [200] * 3  # the flooding key keeps its newest three
        assert (await http.post("/mcp", json=ping, headers=quiet)).status_code == 200
        fresh = await open_session(http, quiet_token)  # nobody is refused a new session
        assert (await http.post("/mcp", json=ping, headers=fresh)).status_code == 200


async def test_foreign_hosts_and_origins_are_refused_with_or_without_a_credential(aiohttp_server, settings):
    served = await serve(aiohttp_server, replace(settings, mcp_allowed_origins=("https://app.example",)))
    notes = await served.space("notes")
    token, _ = await served.key(notes)
    bearer = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(base_url=served.base, headers=ACCEPT) as http:
        for credential in ({}, bearer):
            evil = await http.post(
                "/mcp", json=INIT, headers={**credential, "Origin": "https://evil.example"}
            )
            assert evil.status_code == 403, evil.text
            rebound = await http.post("/mcp", json=INIT, headers={**credential, "Host": "evil.example"})
            assert rebound.status_code == 421, rebound.text
            sandboxed = await http.post("/mcp", json=INIT, headers={**credential, "Origin": "null"})
            assert sandboxed.status_code == 403
        for origin in ("https://app.example", served.base, "http://localhost:6274"):
            ok = await http.post("/mcp", json=INIT, headers={**bearer, "Origin": origin})
            assert ok.status_code == 200, (origin, ok.text)
            assert ok.headers["access-control-allow-origin"] == origin
            exposed = ok.headers["access-control-expose-headers"]
            assert "Mcp-Session-Id" in exposed and "WWW-Authenticate" in exposed
        assert (
            await http.post("/mcp", json=INIT, headers={**bearer, "Host": "localhost:1"})
        ).status_code == 200
        assert (
            await http.post("/mcp", json=INIT, headers={**bearer, "Host": "[::1]:8080"})
        ).status_code == 200
        assert (await http.post("/mcp", json=INIT, headers={"Origin": served.base})).status_code == 401


async def test_a_browser_preflight_may_send_the_session_headers_and_read_the_challenge(served):
    async with httpx2.AsyncClient(base_url=served.base) as http:
        pre = await http.request(
            "OPTIONS",
            "/mcp",
            headers={
                "Origin": "http://localhost:6274",
                "Access-Control-Request-Method": "DELETE",
                "Access-Control-Request-Headers": "authorization, mcp-session-id, mcp-protocol-version",
            },
        )
        assert pre.status_code == 204
        assert pre.headers["access-control-allow-origin"] == "http://localhost:6274"
        assert "DELETE" in pre.headers["access-control-allow-methods"]
        allowed = pre.headers["access-control-allow-headers"]
        assert all(h in allowed for h in ("Mcp-Session-Id", "MCP-Protocol-Version", "Last-Event-ID"))
        foreign = await http.request(
            "OPTIONS",
            "/mcp",
            headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
        )
        assert foreign.status_code == 403
        challenge = await http.post("/mcp", json=INIT, headers={"Origin": "http://localhost:6274"})
        assert challenge.status_code == 401
        assert "WWW-Authenticate" in challenge.headers["access-control-expose-headers"]
