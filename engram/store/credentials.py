"""Issued and revoked space credentials (docs/space-host.md#revoking-credentials): which credentials engram
minted for whom in its hosted spaces, and which credentials any space's readers must be refused until
they expire. Plain functions over a connection; rows are pruned once the credential they name expired."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from engram.store.point_cache import cacheable
from engram.store.spaces import require_space


def record_issued(
    conn: sqlite3.Connection, space_uri: str, member: str, jti: str, expires_ms: int, now_ms: int
) -> None:
    space = require_space(conn, space_uri)
    conn.execute("DELETE FROM issued_credentials WHERE expires_ms <= ?", (now_ms,))
    conn.execute(
        "INSERT INTO issued_credentials (space_id, jti, member, expires_ms) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (space_id, jti) DO NOTHING",
        (space.id, jti, member, expires_ms),
    )


def revoke_issued(conn: sqlite3.Connection, space_uri: str, member: str, now_ms: int) -> list[str]:
    """Move ``member``'s live credentials in the space to the revoked set; returns their jti."""
    space = require_space(conn, space_uri)
    rows = conn.execute(
        "SELECT jti, expires_ms FROM issued_credentials WHERE space_id = ? AND member = ? AND expires_ms > ?"
        " ORDER BY jti",
        (space.id, member, now_ms),
    ).fetchall()
    conn.execute("DELETE FROM issued_credentials WHERE space_id = ? AND member = ?", (space.id, member))
    _insert_revoked(conn, space.id, rows, now_ms)
    return [jti for jti, _ in rows]


def add_revoked(
    conn: sqlite3.Connection, space_uri: str, jtis: Iterable[str], expires_ms: int, now_ms: int
) -> None:
    space = require_space(conn, space_uri)
    _insert_revoked(conn, space.id, [(jti, expires_ms) for jti in jtis], now_ms)


def _insert_revoked(
    conn: sqlite3.Connection, space_id: int, rows: list[tuple[str, int]], now_ms: int
) -> None:
    conn.execute("DELETE FROM revoked_credentials WHERE expires_ms <= ?", (now_ms,))
    for jti, expires_ms in rows:
        conn.execute(
            "INSERT INTO revoked_credentials (space_id, jti, expires_ms) VALUES (?, ?, ?)"
            " ON CONFLICT (space_id, jti) DO UPDATE SET expires_ms = excluded.expires_ms",
            (space_id, jti, expires_ms),
        )


@cacheable  # reads only revoked_credentials, whose every change moves the change counter (migration 0013)
def revoked_jtis(conn: sqlite3.Connection, space_uri: str) -> frozenset[str]:
    """The jti of the space's revoked credentials (expired ones may linger until the next revocation: a
    credential past its exp is refused anyway)."""
    rows = conn.execute(
        "SELECT r.jti FROM revoked_credentials r JOIN spaces s ON s.id = r.space_id WHERE s.uri = ?",
        (space_uri,),
    ).fetchall()
    return frozenset(jti for (jti,) in rows)
