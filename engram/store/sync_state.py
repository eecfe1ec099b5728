"""Per-repo sync positions of a synced space (used by engram/sync): the last rev, set hash and space rev."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from engram.store.spaces import require_space
from engram.store.writes import now_iso


@dataclass(frozen=True)
class RepoPosition:
    repo: str
    rev: str | None
    set_hash: str | None
    space_rev: str | None
    updated_at: str


def get_positions(conn: sqlite3.Connection, space_uri: str) -> dict[str, RepoPosition]:
    space = require_space(conn, space_uri)
    rows = conn.execute(
        "SELECT repo, rev, set_hash, space_rev, updated_at FROM sync_state WHERE space_id = ?", (space.id,)
    )
    return {row[0]: RepoPosition(*row) for row in rows}


def set_position(
    conn: sqlite3.Connection,
    space_uri: str,
    repo: str,
    rev: str | None,
    set_hash: str | None = None,
    space_rev: str | None = None,
) -> None:
    """Record a repo's position; call it in the same `store.write` as the memories it covers, so a crash
    can never advance the position past writes that were not committed."""
    space = require_space(conn, space_uri)
    conn.execute(
        "INSERT INTO sync_state (space_id, repo, rev, set_hash, space_rev, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (space_id, repo) DO UPDATE SET rev = excluded.rev, set_hash = excluded.set_hash,"
        " space_rev = excluded.space_rev, updated_at = excluded.updated_at",
        (space.id, repo, rev, set_hash, space_rev, now_iso()),
    )
