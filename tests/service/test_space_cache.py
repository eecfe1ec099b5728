"""SpaceService.find remembers spaces until any process commits a write to the SQLite file
(docs/internals.md#space-cache): a write through another Store on the same file, as another serving
process or the CLI would make, is seen by the next find."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from support.models import SERVICE_MODEL as MODEL

from engram.errors import UnknownSpace
from engram.store.database import Store, database_path
from engram.store.models import Embedding, MemoryWrite
from engram.store.spaces import bump_generation, get_space


async def _write_one(ctx, space: str) -> None:
    """One memory written through the service (a space-scoped commit)."""
    author, embedding = ctx.settings.service_did, Embedding(MODEL.model, MODEL.digest, 16, np.ones(16))
    await ctx.services.memories.write(space, [MemoryWrite(author=author, text="a", embedding=embedding)])


async def test_find_answers_from_memory_until_a_write_commits(ctx, space):
    spaces = ctx.services.spaces
    first = await spaces.find(space)
    assert await spaces.find(space) is first  # nothing committed: the remembered object

    await _write_one(ctx, space)
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


async def test_the_space_for_a_write_is_remembered_across_memory_writes_not_config_changes(ctx, space):
    """`require_for_write` (a write's embedding step) keeps its answer while only space-scoped writes
    commit (their generation bumps); a model change, an unscoped write, is seen by the next one."""
    spaces = ctx.services.spaces
    first = await spaces.require_for_write(space)
    for _ in range(2000):  # PostgreSQL: the notifications of the fixture's own commits may still arrive
        if await spaces.require_for_write(space) is first:
            break
        first = await spaces.require_for_write(space)
        await asyncio.sleep(0.01)
    await _write_one(ctx, space)
    assert await spaces.require_for_write(space) is first  # generation moved, nothing it is used for
    assert (await spaces.find(space)).generation == first.generation + 1
    await spaces.configure(space, document_prefix="passage: ")
    changed = await spaces.require_for_write(space)
    assert changed.config.document_prefix == "passage: "
    await spaces.delete(space)
    with pytest.raises(UnknownSpace):
        await spaces.require_for_write(space)
