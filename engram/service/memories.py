"""Writing and reading memories of a space (hosted writes embed what lacks a vector)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ..store import Memory, MemoryRecord, MemoryWrite
from ..store import memories as store_memories
from ..store import queries as store_queries
from ..xrpc.errors import NotFoundError
from .embedding import embed_documents, hosts_model

if TYPE_CHECKING:
    from ..context import AppContext
    from .spaces import SpaceService


class MemoryService:
    def __init__(self, ctx: AppContext, spaces: SpaceService):
        self.ctx = ctx
        self.spaces = spaces

    async def write(self, space_uri: str, items: Sequence[MemoryWrite]) -> list[MemoryRecord]:
        """Upsert memories; those without an embedding are embedded first when engram hosts the space's
        model (otherwise they are stored and reported as skipped, as sync does for foreign vectors).
        Returns once the batch is committed: an acknowledged write is never lost."""
        space = await self.spaces.require(space_uri)
        missing = [i for i, item in enumerate(items) if item.embedding is None]
        if missing and hosts_model(self.ctx.embedder, space):
            embeddings = await embed_documents(
                self.ctx.embedder,
                self.ctx.pool,
                space,
                [items[i].text for i in missing],
                [items[i].tags for i in missing],
            )
            items = list(items)
            for i, embedding in zip(missing, embeddings, strict=True):
                items[i] = replace(items[i], embedding=embedding)
        return await self.ctx.store.write(store_memories.put_memories, space_uri, items)

    async def delete(self, space_uri: str, author: str, rkey: str) -> bool:
        return await self.ctx.store.write(store_memories.delete_memory, space_uri, author, rkey)

    async def get(self, space_uri: str, uri: str) -> Memory:
        memory = await self.ctx.store.read(store_queries.get_memory, space_uri, uri)
        if memory is None:
            raise NotFoundError(f"no memory {uri} in this space", "MemoryNotFound")
        return memory

    async def list(self, space_uri: str, **filters) -> tuple[list[Memory], str | None]:
        return await self.ctx.store.read(store_queries.list_memories, space_uri, **filters)
