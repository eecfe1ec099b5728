"""One-time console sign-in links in the store (engram/console/login_links.py), by the sha256 of the
token. Plain functions over a connection; times are Unix milliseconds."""

from __future__ import annotations

import sqlite3


def add_link(conn: sqlite3.Connection, digest: str, expires_ms: int, now_ms: int) -> None:
    """Store a new link; expired ones are pruned on the way (so the table holds only live links)."""
    conn.execute("DELETE FROM console_links WHERE expires_ms <= ?", (now_ms,))
    conn.execute("INSERT INTO console_links (digest, expires_ms) VALUES (?, ?)", (digest, expires_ms))


def take_link(conn: sqlite3.Connection, digest: str, now_ms: int) -> bool:
    """True once for a live link. The DELETE is the one step only one redeemer gets past, whichever
    process or node it runs in: a second transaction deletes nothing."""
    row = conn.execute("SELECT expires_ms FROM console_links WHERE digest = ?", (digest,)).fetchone()
    if row is None:
        return False
    taken = conn.execute("DELETE FROM console_links WHERE digest = ?", (digest,)).rowcount == 1
    return taken and now_ms < row[0]


def count_links(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM console_links").fetchone()[0])
