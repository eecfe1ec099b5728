"""The real app on a real port with a hosted space (hashing embedder, as every app test) and a key for the
shims, for the document tests."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from engram.app import create_app
from engram.app_keys import context_key
from engram.service.apikeys import create_api_key


@dataclass
class Library:
    client: object
    ctx: object
    space: str
    key: str  # read + write API key of the space

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    async def ingest(self, data: bytes, name: str, **kwargs):
        return await self.ctx.services.documents.ingest(self.space, data, name=name, **kwargs)

    async def chunks(self, document_id: str):
        return await self.ctx.services.documents.chunks(self.space, document_id)


@pytest.fixture
def settings(settings):
    """A labelled question set asks ~120 questions at once: the text-search rates must not be what it tests."""
    return replace(
        settings,
        text_search_rate=1000.0,
        text_search_burst=1000,
        key_text_search_rate=1000.0,
        key_text_search_burst=1000,
        search_rate=1000.0,
        search_burst=1000,
    )


@pytest.fixture
async def library(aiohttp_client, settings) -> Library:
    client = await aiohttp_client(await create_app(settings))
    ctx = client.app[context_key]
    space = await ctx.services.spaces.create_hosted("library")
    _, token = await create_api_key(ctx.store, space.uri, ["read", "write"], "documents")
    return Library(client, ctx, space.uri, token)
