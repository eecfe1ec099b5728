"""Which store backend a process opens: PostgreSQL when a database URL is set, else the SQLite file in the
data directory (docs/scale-out.md#the-store-on-postgresql)."""

from __future__ import annotations

from pathlib import Path

from engram.store.database import Store, database_path


async def open_store(data_dir: Path, database_url: str | None) -> Store:
    if database_url:
        from engram.store.postgres.store import PostgresStore  # psycopg is only loaded when used

        return await PostgresStore.open(database_url)
    return await Store.open(database_path(data_dir))
