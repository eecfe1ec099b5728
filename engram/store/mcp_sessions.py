"""MCP streamable-HTTP sessions in the store, so a session opened through one serving process (or cluster
node) is known to all of them (docs/mcp.md#sessions). Only the sha256 of the random session id is stored.
Plain functions over a connection; times are Unix milliseconds."""

from __future__ import annotations

import sqlite3


def open_session(
    conn: sqlite3.Connection,
    digest: str,
    principal: str,
    now_ms: int,
    idle_ms: int,
    per_principal: int,
    overall: int,
) -> int:
    """Store a new session for `principal`; returns how many live sessions it pushed out.

    Idle sessions are pruned first. A principal at its cap loses its own oldest session, so one key
    opening sessions in a loop only ever replaces its own. At the overall cap the oldest session of the
    principal holding the most goes: the flooding key pays, not whoever comes next."""
    conn.execute("DELETE FROM mcp_sessions WHERE used_ms <= ?", (now_ms - idle_ms,))
    evicted = 0
    (mine,) = conn.execute("SELECT COUNT(*) FROM mcp_sessions WHERE principal = ?", (principal,)).fetchone()
    if mine >= per_principal:
        evicted += _drop_oldest(conn, principal, mine - per_principal + 1)
    (total,) = conn.execute("SELECT COUNT(*) FROM mcp_sessions").fetchone()
    while total >= overall:
        (heaviest,) = conn.execute(
            "SELECT principal FROM mcp_sessions GROUP BY principal ORDER BY COUNT(*) DESC, principal LIMIT 1"
        ).fetchone()
        dropped = _drop_oldest(conn, heaviest, total - overall + 1)
        evicted += dropped
        total -= dropped
    conn.execute(
        "INSERT INTO mcp_sessions (digest, principal, created_ms, used_ms) VALUES (?, ?, ?, ?)",
        (digest, principal, now_ms, now_ms),
    )
    return evicted


def _drop_oldest(conn: sqlite3.Connection, principal: str, count: int) -> int:
    return conn.execute(
        "DELETE FROM mcp_sessions WHERE digest IN (SELECT digest FROM mcp_sessions WHERE principal = ?"
        " ORDER BY created_ms, digest LIMIT ?)",
        (principal, count),
    ).rowcount


def live_session(conn: sqlite3.Connection, digest: str, now_ms: int, idle_ms: int) -> tuple[str, int] | None:
    """(principal, used_ms) of a session that has not been idle for `idle_ms`."""
    row: tuple[str, int] | None = conn.execute(
        "SELECT principal, used_ms FROM mcp_sessions WHERE digest = ? AND used_ms > ?",
        (digest, now_ms - idle_ms),
    ).fetchone()
    return row


def touch_session(conn: sqlite3.Connection, digest: str, now_ms: int) -> None:
    conn.execute(
        "UPDATE mcp_sessions SET used_ms = ? WHERE digest = ? AND used_ms < ?", (now_ms, digest, now_ms)
    )


def end_session(conn: sqlite3.Connection, digest: str) -> bool:
    return conn.execute("DELETE FROM mcp_sessions WHERE digest = ?", (digest,)).rowcount == 1


def count_sessions(conn: sqlite3.Connection, principal: str | None = None) -> int:
    if principal is None:
        return int(conn.execute("SELECT COUNT(*) FROM mcp_sessions").fetchone()[0])
    return int(
        conn.execute("SELECT COUNT(*) FROM mcp_sessions WHERE principal = ?", (principal,)).fetchone()[0]
    )
