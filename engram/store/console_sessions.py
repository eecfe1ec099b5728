"""Web console sessions in the store, so a session made by one serving process is known to all of them
(docs/internals.md#using-every-core). Only the sha256 of the cookie's random value is stored. Plain
functions over a connection; times are Unix milliseconds."""

from __future__ import annotations

import sqlite3
from typing import Any

_COLUMNS = "role, key_id, csrf, expires_ms"


def start_session(
    conn: sqlite3.Connection,
    digest: str,
    role: str,
    key_id: int | None,
    csrf: str,
    now_ms: int,
    expires_ms: int,
    max_sessions: int,
    per_principal: int,
) -> None:
    """Store a new session. Expired ones are pruned; past ``per_principal`` the signer's own oldest are
    dropped (the operator, or one API key); past ``max_sessions`` in all, the oldest *reader* sessions are
    dropped: readers flooding sign-ins evict each other at worst, never the operator
    (docs/security.md#per-tenant-caps)."""
    conn.execute("DELETE FROM console_sessions WHERE expires_ms <= ?", (now_ms,))
    if key_id is None:
        mine, params = "role = ? AND key_id IS NULL", (role,)  # type: tuple[str, tuple[Any, ...]]
    else:
        mine, params = "role = ? AND key_id = ?", (role, key_id)
    _drop_oldest(conn, mine, params, per_principal)
    _drop_oldest(conn, "role = 'reader'", (), max_sessions)
    conn.execute(
        f"INSERT INTO console_sessions (digest, {_COLUMNS}, created_ms) VALUES (?, ?, ?, ?, ?, ?)",
        (digest, role, key_id, csrf, expires_ms, now_ms),
    )


def _drop_oldest(conn: sqlite3.Connection, where: str, params: tuple[Any, ...], keep_below: int) -> None:
    """Delete the oldest sessions matching ``where`` so that one more leaves at most ``keep_below``."""
    (count,) = conn.execute(f"SELECT COUNT(*) FROM console_sessions WHERE {where}", params).fetchone()
    if count >= keep_below:
        conn.execute(
            "DELETE FROM console_sessions WHERE digest IN (SELECT digest FROM console_sessions"
            f" WHERE {where} ORDER BY created_ms, digest LIMIT ?)",
            (*params, count - keep_below + 1),
        )


def live_session(conn: sqlite3.Connection, digest: str, now_ms: int) -> tuple[Any, ...] | None:
    """(role, key_id, csrf, expires_ms) of a session that has not expired."""
    row: tuple[Any, ...] | None = conn.execute(
        f"SELECT {_COLUMNS} FROM console_sessions WHERE digest = ? AND expires_ms > ?", (digest, now_ms)
    ).fetchone()
    return row


def end_session(conn: sqlite3.Connection, digest: str) -> None:
    conn.execute("DELETE FROM console_sessions WHERE digest = ?", (digest,))


def end_key_sessions(conn: sqlite3.Connection, key_id: int) -> None:
    conn.execute("DELETE FROM console_sessions WHERE key_id = ?", (key_id,))


def end_all_sessions(conn: sqlite3.Connection) -> int:
    """End every session (`engram console logout-all`); returns how many there were."""
    return int(conn.execute("DELETE FROM console_sessions").rowcount)


def count_sessions(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM console_sessions").fetchone()[0])
