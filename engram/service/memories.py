"""Writing and reading memories of a space (hosted writes embed what lacks a vector)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import InvalidInput, NotFound
from ..store import Memory, MemoryRecord, MemoryWrite, memory_reads, memory_writes
from ..store.reserved_tags import RESERVED_TAG_PREFIXES, is_reserved_tag
from .embedding import embed_missing

if TYPE_CHECKING:
    from ..embed.base import Embedder
    from ..store.database import Store
    from ..workers import WorkerPool
    from .spaces import SpaceService


MAX_LIST_LIMIT = 1000


def check_no_reserved_tags(items: Sequence[MemoryWrite]) -> None:
    for i, item in enumerate(items):
        for tag in item.tags or ():
            if is_reserved_tag(tag):
                raise InvalidInput(
                    f"memories[{i}]: tag {tag!r} is in a namespace reserved to engram's shims"
                    f" ({', '.join(RESERVED_TAG_PREFIXES)})",
                    "ReservedTag",
                )


class MemoryService:
    def __init__(self, store: Store, spaces: SpaceService, *, embedder: Embedder | None, pool: WorkerPool):
        self.store = store
        self.spaces = spaces
        self.embedder = embedder  # embeds memories that arrive without a vector, if it runs the space's model
        self.pool = pool

    async def write(self, space_uri: str, items: Sequence[MemoryWrite]) -> list[MemoryRecord]:
        """Upsert memories; those without an embedding are embedded first when engram hosts the space's
        model (otherwise they are stored and reported as skipped, as sync does for foreign vectors).
        Returns once the batch is committed: an acknowledged write is never lost.

        Tags of the shims' bookkeeping namespace are refused (engram/store/reserved_tags.py): only a shim
        writes them, through the store directly, so no other door can plant a memory in a shim's tenant."""
        check_no_reserved_tags(items)
        space = await self.spaces.require_for_write(space_uri)  # its model; put_memories reads it again
        items = await embed_missing(self.embedder, self.pool, space, items)
        return await self.store.write_to(space_uri, memory_writes.put_memories, space_uri, items)

    async def delete(self, space_uri: str, author: str, rkey: str) -> bool:
        return await self.store.write_to(space_uri, memory_writes.delete_memory, space_uri, author, rkey)

    async def get(self, space_uri: str, uri: str) -> Memory:
        memory = await self.store.read(memory_reads.get_memory, space_uri, uri)
        if memory is None:
            raise NotFound(f"no memory {uri} in this space", "MemoryNotFound")
        return memory

    async def list(
        self, space_uri: str, *, limit: int = 25, tags: Sequence[str] = (), **filters
    ) -> tuple[list[Memory], str | None]:
        """A page of memories, newest first; `filters` are list_memories' cursor/author/since/attrs."""
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIST_LIMIT:
            raise InvalidInput(f"limit must be an integer in 1..{MAX_LIST_LIMIT}")
        if isinstance(tags, str) or not all(isinstance(tag, str) for tag in tags):
            raise InvalidInput("tags must be a list of strings")
        return await self.store.read(
            memory_reads.list_memories, space_uri, limit=limit, tags=tuple(tags), **filters
        )
