"""The source of truth: `Store` (one writer thread, reader threads, migrations) and repositories.

SQLite in the data dir by default; PostgreSQL behind ENGRAM_DATABASE_URL (`engram.store.postgres`, opened
by `engram.store.backends.open_store`), with the same API and the same repositories.

Repositories are plain functions over a connection, run through the store:

    space = await store.write(spaces.create_space, uri, "hosted")
    records = await store.write(memory_writes.put_memories, uri, [MemoryWrite(...)])
    page, cursor = await store.read(memory_reads.list_memories, uri, limit=25)

Writing functions (spaces.create_space/set_config/delete_space, memory_writes.*, apikeys.create_api_key/
revoke_api_key, synced.apply_repo_changes) must go through `store.write`; reader connections are query-only
and reject them. Several can be combined in one transaction by calling them from one function passed to
`store.write`.
"""

from engram.store.database import Store, database_path
from engram.store.models import (
    ApiKey,
    Embedding,
    Memory,
    MemoryRecord,
    MemoryWrite,
    ModelSpec,
    Space,
    SpaceConfig,
    SpaceStatus,
    model_key,
)

__all__ = [
    "ApiKey",
    "Embedding",
    "Memory",
    "MemoryRecord",
    "MemoryWrite",
    "ModelSpec",
    "Space",
    "SpaceConfig",
    "SpaceStatus",
    "Store",
    "database_path",
    "model_key",
]
