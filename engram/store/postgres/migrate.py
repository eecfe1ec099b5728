"""Numbered schema migrations for PostgreSQL (`postgres/migrations/NNNN_name.sql`, the same numbers and
names as the SQLite set), tracked in the one-row table `engram_schema`.

Each file runs in one transaction with its version bump (PostgreSQL DDL is transactional). A transaction
advisory lock serializes the runners, so several engram processes starting against one fresh database
apply each migration once; the version is read after the lock is taken.
"""

from __future__ import annotations

import psycopg

from engram.store.migrate import available_migrations

PACKAGE = "engram.store.postgres.migrations"
# Any fixed bigint works; the store's write lock uses another (engram/store/postgres/store.py).
MIGRATION_LOCK = 0x656E6772616D_01


def schema_version(conn: psycopg.Connection) -> int:
    conn.execute("CREATE TABLE IF NOT EXISTS engram_schema (version bigint NOT NULL)")
    row = conn.execute("SELECT version FROM engram_schema").fetchone()
    return row[0] if row else 0


def apply_migrations(conn: psycopg.Connection) -> int:
    """Bring the database up to the newest shipped version; returns the number of migrations applied.

    `conn` must be in autocommit mode (each migration opens its own transaction)."""
    migrations = available_migrations(PACKAGE)
    newest = migrations[-1][0] if migrations else 0
    applied = 0
    for version, name, sql in migrations:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            current = schema_version(conn)
            if current > newest:
                raise RuntimeError(f"database schema v{current} is newer than this engram (v{newest})")
            if current >= version:
                continue
            try:
                conn.execute(sql.encode())  # bytes: no placeholder parsing, several statements in one go
            except psycopg.Error as exc:
                raise RuntimeError(f"migration {name} failed: {exc}") from exc
            conn.execute("DELETE FROM engram_schema")
            conn.execute("INSERT INTO engram_schema (version) VALUES (%s)", (version,))
            applied += 1
    return applied
