"""/mcp sessions across the serving processes of one `engram serve` (docs/mcp.md#sessions): a session
opened through one process is served by every other, whichever the kernel hands a fresh connection to; it
ends everywhere at DELETE; and a 2025-protocol SDK client that opens a new connection per request works."""

from __future__ import annotations

import asyncio

import aiohttp
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from support.mcp import ACCEPT, INIT, engram_serve, result_of

JSON_POST = {**ACCEPT, "Content-Type": "application/json"}


async def fresh_post(url: str, body: dict, headers: dict) -> tuple[int, str, dict]:
    """One request on a connection of its own (the kernel spreads new connections over the processes)."""
    async with aiohttp.ClientSession() as http, http.post(url, json=body, headers=headers) as r:
        return r.status, await r.text(), dict(r.headers)


async def test_a_session_is_served_by_every_process_and_ends_everywhere(tmp_path):
    async with engram_serve(tmp_path) as engram:
        auth = {**JSON_POST, "Authorization": f"Bearer {engram.token}"}
        status, text, headers = await fresh_post(engram.mcp_url, INIT, auth)
        assert status == 200, text
        session = {**auth, "Mcp-Session-Id": headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-06-18"}
        notified = await fresh_post(
            engram.mcp_url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session
        )
        assert notified[0] == 202, notified
        answers = []
        for i in range(20):
            status, text, _ = await fresh_post(
                engram.mcp_url, {"jsonrpc": "2.0", "id": 10 + i, "method": "tools/list"}, session
            )
            answers.append((status, '"recall"' in text))
        assert answers == [(200, True)] * 20
        async with aiohttp.ClientSession() as http, http.delete(engram.mcp_url, headers=session) as r:
            assert r.status == 200
        after = [
            (await fresh_post(engram.mcp_url, {"jsonrpc": "2.0", "id": 99, "method": "ping"}, session))[0]
            for _ in range(6)
        ]
        assert after == [404] * 6  # ended in the store: no process serves it any more


async def test_the_sdk_client_on_a_new_connection_per_request_connects_every_time(tmp_path):
    async with engram_serve(tmp_path) as engram:
        limits = httpx2.Limits(max_keepalive_connections=0)  # every request on a new connection
        headers = {"Authorization": f"Bearer {engram.token}"}
        for i in range(5):
            async with (
                httpx2.AsyncClient(headers=headers, limits=limits) as http,
                Client(streamable_http_client(engram.mcp_url, http_client=http), mode="legacy") as client,
            ):
                assert client.protocol_version.startswith("2025-")
                made = result_of(await client.call_tool("remember", {"text": f"fact {i} about the build"}))
                listed = result_of(await client.call_tool("list_memories", {"limit": 100}))
                assert made["uri"] in {m["uri"] for m in listed["memories"]}
                assert result_of(await client.call_tool("list_spaces", {}))["spaces"][0]["write"]


async def test_agent_speed_recalls_all_succeed_on_the_default_limits(tmp_path):
    """50 back-to-back recalls of one agent, and 5 sessions of one key with 4 recalls in flight each:
    the key's text budget, the space's search slots and the embedder's queue fit agents
    (docs/mcp.md#limits-for-agents). Every count is the default; only the waits' time bounds are lifted,
    so a busy machine's slow embeddings cannot turn a waiter away (that a queued recall holds no search
    slot is shown without timing in test_mcp_search_slots.py)."""
    untimed = {"ENGRAM_EMBED_WAIT_MS": "60000", "ENGRAM_SEARCH_WAIT_MS": "60000"}
    async with engram_serve(tmp_path, ENGRAM_EMBEDDER="builtin", **untimed) as engram:  # the real model
        headers = {"Authorization": f"Bearer {engram.token}"}
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(engram.mcp_url, http_client=http)) as client,
        ):
            result_of(await client.call_tool("remember", {"text": "The release train leaves on Thursdays."}))
            for i in range(50):
                hits = result_of(
                    await client.call_tool("recall", {"query": f"release train {i}", "limit": 3})
                )
                assert hits["results"], i

        async def session(n: int) -> list[dict]:
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(engram.mcp_url, http_client=http), mode="legacy") as client,
            ):
                calls = [
                    client.call_tool("recall", {"query": f"when does the train leave {n}.{i}"})
                    for i in range(4)
                ]
                return [result_of(call) for call in await asyncio.gather(*calls)]

        answers = await asyncio.gather(*(session(n) for n in range(5)))
        assert [len(a) for a in answers] == [4] * 5
        assert all(hit["results"] for a in answers for hit in a)
