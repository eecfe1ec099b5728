"""A memory an agent remembers through `/mcp` of the running `engram serve` is found by `engram search`,
the CLI's signed reader client, like any other memory of the space."""

from __future__ import annotations

import asyncio

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

FACT = "The staging database is rebuilt from a snapshot every Sunday at 03:00 UTC."


async def remember_over_mcp(url: str, token: str) -> str:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        result = await client.call_tool("remember", {"text": FACT, "tags": ["ops"]})
        assert not result.is_error, result.content
        return result.structured_content["uri"]


def test_engram_search_finds_what_an_agent_remembered_over_mcp(engram, server, space_name):
    assert engram("space", "create", space_name).code == 0
    created = engram("apikey", "create", space_name, "--scope", "read", "--scope", "write")
    assert created.code == 0, created.err
    uri = asyncio.run(remember_over_mcp(server.url, created.out.strip()))
    found = engram(
        "search", space_name, "when is the staging database rebuilt", "--url", server.url, "--json"
    )
    assert found.code == 0, found.err
    hits = found.json()["memories"]
    assert hits[0]["uri"] == uri and hits[0]["text"] == FACT and hits[0]["tags"] == ["ops"]
