"""Embedding a hosted space's memories again with the space's model (`engram reindex`), after its model
was changed (`engram space config --model`): the memories that carry another model's vector, or none, are
written again without one, so `MemoryService.write` embeds them as it embeds any write, each a signed
update of its record. Only where engram runs the model; a space with a model change under way (`next`)
is left to its writers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import InvalidInput
from ..store import MemoryWrite
from ..store.memory_reads import iter_export
from .embedding import hosts_model
from .search import require_model

if TYPE_CHECKING:
    from ..store import Memory
    from ..store.database import Store
    from .memories import MemoryService
    from .spaces import SpaceService

BATCH = 256  # memories per write: an embedding batch, one transaction


async def reembed_space(
    store: Store,
    spaces: SpaceService,
    memories: MemoryService,
    embedder,
    space_uri: str,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Embed every memory of the space that lacks a vector of its active model; returns how many. Raises
    InvalidInput when engram does not run the model or a model change is under way."""
    space = await spaces.require(space_uri)
    spec = require_model(space)
    if space.config is not None and space.config.next is not None:
        raise InvalidInput(
            "the space has a model change under way (next): finish or clear it first", "ModelChange"
        )
    if not hosts_model(embedder, space):
        raise InvalidInput(f"engram does not run {spec.model}: its writers supply the vectors", "NotHosted")
    done = 0
    async for batch in iter_export(store, space_uri, batch_size=BATCH):
        stale = [m for m in batch if m.model_key != spec.key]
        if stale:
            await memories.write(space_uri, [_again(m) for m in stale])
            done += len(stale)
        if progress:
            progress(len(batch))
    return done


def _again(memory: Memory) -> MemoryWrite:
    """The memory as written, without its vector: the write embeds it with the space's model."""
    return MemoryWrite(
        author=memory.author,
        text=memory.text,
        rkey=memory.rkey,
        tags=memory.tags,
        source=memory.source,
        created_at=memory.created_at,
        attrs=memory.attrs or None,
    )
