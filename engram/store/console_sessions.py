"""Web console sessions in the store, so a session made by one serving process is known to all of them
(docs/architecture.md#using-every-core). Only the sha256 of the cookie's random value is stored. Plain
functions over a connection; times are Unix milliseconds."""

from __future__ import annotations

import sqlite3

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
) -> None:
    """Store a new session; expired ones are pruned, and past ``max_sessions`` the oldest are dropped."""
    conn.execute("DELETE FROM console_sessions WHERE expires_ms <= ?", (now_ms,))
    (count,) = conn.execute("SELECT COUNT(*) FROM console_sessions").fetchone()
    if count >= max_sessions:
        conn.execute(
            "DELETE FROM console_sessions WHERE digest IN"
            " (SELECT digest FROM console_sessions ORDER BY created_ms LIMIT ?)",
            (count - max_sessions + 1,),
        )
    conn.execute(
        f"INSERT INTO console_sessions (digest, {_COLUMNS}, created_ms) VALUES (?, ?, ?, ?, ?, ?)",
        (digest, role, key_id, csrf, expires_ms, now_ms),
    )


def live_session(conn: sqlite3.Connection, digest: str, now_ms: int) -> tuple | None:
    """(role, key_id, csrf, expires_ms) of a session that has not expired."""
    return conn.execute(
        f"SELECT {_COLUMNS} FROM console_sessions WHERE digest = ? AND expires_ms > ?", (digest, now_ms)
    ).fetchone()


def end_session(conn: sqlite3.Connection, digest: str) -> None:
    conn.execute("DELETE FROM console_sessions WHERE digest = ?", (digest,))


def end_key_sessions(conn: sqlite3.Connection, key_id: int) -> None:
    conn.execute("DELETE FROM console_sessions WHERE key_id = ?", (key_id,))


def count_sessions(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT COUNT(*) FROM console_sessions").fetchone()[0]
