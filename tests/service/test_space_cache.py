"""SpaceService.find remembers spaces until any process commits a write to the SQLite file
(docs/internals.md#space-cache): a write through another Store on the same file, as another serving
process or the CLI would make, is seen by the next find."""

from __future__ import annotations

import numpy as np
from support.models import SERVICE_MODEL as MODEL

from engram.store.database import Store, database_path
from engram.store.models import Embedding, MemoryWrite
from engram.store.spaces import bump_generation, get_space


async def test_find_answers_from_memory_until_a_write_commits(ctx, space):
    spaces = ctx.services.spaces
    first = await spaces.find(space)
    assert await spaces.find(space) is first  # nothing committed: the remembered object

    await ctx.services.memories.write(
        space,
        [
            MemoryWrite(
                author=ctx.settings.service_did,
                text="a",
                embedding=Embedding(MODEL.model, MODEL.digest, 16, np.ones(16)),
            )
        ],
    )
    after_write = await spaces.find(space)
    assert after_write.generation == first.generation + 1


async def test_a_commit_by_another_store_on_the_file_is_seen(ctx, space):
    spaces = ctx.services.spaces
    before = await spaces.find(space)
    other = await Store.open(database_path(ctx.settings.data_dir))  # another process's store
    try:
        await other.write(lambda conn: bump_generation(conn, get_space(conn, space).id))
    finally:
        await other.close()
    assert (await spaces.find(space)).generation == before.generation + 1


async def test_deletion_and_creation_are_seen(ctx, space):
    spaces = ctx.services.spaces
    assert await spaces.find(space + "-not-yet") is None
    assert not (await spaces.find(space)).deleted
    await spaces.delete(space)
    assert (await spaces.find(space)).deleted
