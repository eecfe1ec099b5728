"""Numbered schema migrations (`migrations/NNNN_name.sql`), tracked with `PRAGMA user_version`.

Each file is applied in one `BEGIN IMMEDIATE` transaction together with its `user_version` bump, and the
version is re-read after the lock is taken, so two processes opening a fresh file at once (the server and
a CLI command) cannot both apply the same migration. `executescript` is not used because it commits any
open transaction first, which would split a migration from its version bump.
"""

from __future__ import annotations

import re
import sqlite3
from importlib import resources

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def available_migrations(package: str = "engram.store.migrations") -> list[tuple[int, str, str]]:
    """(version, file name, sql) for every shipped migration, in order; versions must be 1..n.

    `package`: the SQLite set, or its PostgreSQL twin `engram.store.postgres.migrations`."""
    found = []
    for entry in resources.files(package).iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    found.sort()
    versions = [version for version, _, _ in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migration numbers must run 1..n without gaps, found {versions}")
    return found


def split_statements(sql: str) -> list[str]:
    """Split a script into statements with SQLite's own tokenizer (handles strings, comments, triggers)."""
    statements, buffer = [], ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip() and not _only_comments(buffer):
        raise ValueError(f"incomplete SQL statement at end of migration: {buffer.strip()[:80]!r}")
    return statements


def _only_comments(text: str) -> bool:
    return all(not line.strip() or line.strip().startswith("--") for line in text.splitlines())


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def apply_migrations(conn: sqlite3.Connection) -> int:
    """Bring the database up to the newest shipped version; returns the number of migrations applied.

    `conn` must be in autocommit mode (isolation_level=None) and not inside a transaction."""
    migrations = available_migrations()
    newest = migrations[-1][0] if migrations else 0
    applied = 0
    for version, name, sql in migrations:
        conn.execute("BEGIN IMMEDIATE")
        try:
            current = schema_version(conn)
            if current > newest:
                raise RuntimeError(f"database schema v{current} is newer than this engram (v{newest})")
            if current >= version:
                conn.execute("ROLLBACK")
                continue
            for statement in split_statements(sql):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version:d}")
            conn.execute("COMMIT")
            applied += 1
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise RuntimeError(f"migration {name} failed: {exc}") from exc  # noqa: TRY004 - not a type check
            raise
    return applied
