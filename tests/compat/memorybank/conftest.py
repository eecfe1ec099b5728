"""Fixtures for the Memory Bank shim: the real app on a real port, a hosted space and API keys for it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from engram.app import create_app
from engram.app_keys import context_key
from engram.service.apikeys import create_api_key


@dataclass
class Bank:
    client: object
    ctx: object
    space: str
    key: str  # read + write
    key_id: int

    def auth(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.key}"}

    async def new_key(self, scopes=("read", "write"), space: str | None = None) -> str:
        _, token = await create_api_key(self.ctx.store, space or self.space, scopes, "test")
        return token

    async def post(self, path: str, body, token: str | None = None):
        return await self.client.post(f"/memorybank{path}", json=body, headers=self.auth(token))

    async def upsert(self, documents, token: str | None = None) -> list[str]:
        response = await self.post("/upsert", {"documents": documents}, token)
        assert response.status == 200, await response.text()
        return (await response.json())["ids"]

    async def query(self, queries, token: str | None = None) -> list[dict]:
        response = await self.post("/query", {"queries": queries}, token)
        assert response.status == 200, await response.text()
        return (await response.json())["results"]


@pytest.fixture
async def bank(aiohttp_client, settings) -> Bank:
    client = await aiohttp_client(await create_app(settings))
    ctx = client.app[context_key]
    space = await ctx.services.spaces.create_hosted("memorybank")
    key, token = await create_api_key(ctx.store, space.uri, ["read", "write"], "memory bank")
    return Bank(client, ctx, space.uri, token, key.id)
