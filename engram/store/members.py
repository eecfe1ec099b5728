"""Members of hosted spaces: who may exchange a delegation token for a space credential.

Plain functions over a connection, like the other repositories. Only hosted spaces have members here: a
synced space's authority lives elsewhere and keeps its own member list.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from engram.errors import InvalidInput
from engram.identifiers import is_did
from engram.store.prepared_memories import now_iso
from engram.store.spaces import require_space


@dataclass(frozen=True)
class Member:
    space_uri: str
    did: str
    read: bool
    write: bool
    granted_at: str


def _hosted_space_id(conn: sqlite3.Connection, space_uri: str) -> int:
    space = require_space(conn, space_uri)
    if space.kind != "hosted":
        raise InvalidInput(
            f"{space_uri} is a synced space: its members are kept by its authority, not here", "NotHosted"
        )
    return space.id


def put_member(conn: sqlite3.Connection, space_uri: str, did: str, *, read: bool, write: bool) -> Member:
    """Grant (or change) a member's access; re-granting replaces the flags and keeps the first grant time."""
    if not is_did(did):
        raise InvalidInput(f"member must be a DID, got {did!r}")
    if not (read or write):
        raise InvalidInput("a grant needs read or write access (revoke to remove a member)")
    space_id = _hosted_space_id(conn, space_uri)
    conn.execute(
        "INSERT INTO space_members (space_id, did, can_read, can_write, granted_at) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (space_id, did) DO UPDATE SET can_read = excluded.can_read,"
        " can_write = excluded.can_write",
        (space_id, did, int(read), int(write), now_iso()),
    )
    member = get_member(conn, space_uri, did)
    assert member is not None
    return member


def remove_member(conn: sqlite3.Connection, space_uri: str, did: str) -> bool:
    """Revoke a member; False if the DID was not one."""
    space_id = _hosted_space_id(conn, space_uri)
    return (
        conn.execute("DELETE FROM space_members WHERE space_id = ? AND did = ?", (space_id, did)).rowcount
        == 1
    )


def get_member(conn: sqlite3.Connection, space_uri: str, did: str) -> Member | None:
    row = conn.execute(
        "SELECT m.did, m.can_read, m.can_write, m.granted_at FROM space_members m"
        " JOIN spaces s ON s.id = m.space_id WHERE s.uri = ? AND m.did = ?",
        (space_uri, did),
    ).fetchone()
    return Member(space_uri, row[0], bool(row[1]), bool(row[2]), row[3]) if row else None


def list_members(conn: sqlite3.Connection, space_uri: str) -> list[Member]:
    space_id = _hosted_space_id(conn, space_uri)
    rows = conn.execute(
        "SELECT did, can_read, can_write, granted_at FROM space_members WHERE space_id = ? ORDER BY did",
        (space_id,),
    ).fetchall()
    return [Member(space_uri, did, bool(r), bool(w), at) for did, r, w, at in rows]


def page_members(conn: sqlite3.Connection, space_uri: str, *, after: str | None, limit: int) -> list[Member]:
    """Members in DID order after ``after`` (com.atproto.simplespace.listMembers pages)."""
    space_id = _hosted_space_id(conn, space_uri)
    rows = conn.execute(
        "SELECT did, can_read, can_write, granted_at FROM space_members WHERE space_id = ? AND did > ?"
        " ORDER BY did LIMIT ?",
        (space_id, after or "", limit),
    ).fetchall()
    return [Member(space_uri, did, bool(r), bool(w), at) for did, r, w, at in rows]


def spaces_of(
    conn: sqlite3.Connection,
    did: str,
    *,
    authorities: list[str],
    authority: str | None = None,
    after: str | None,
    limit: int,
) -> list[tuple[str, bool]]:
    """Live hosted spaces ``did`` owns (its authority, when it is one of ``authorities``: those engram holds
    a key for) or is a member of, under ``authority`` when given, as (uri, is_owner) in URI order after
    ``after``."""
    owned = did in authorities
    rows = conn.execute(
        "SELECT s.uri, s.authority = ? FROM spaces s WHERE s.kind = 'hosted' AND s.deleted_at IS NULL"
        " AND s.uri > ? AND (CAST(? AS TEXT) IS NULL OR s.authority = ?) AND ((? = 1 AND s.authority = ?)"
        " OR EXISTS (SELECT 1 FROM space_members m WHERE m.space_id = s.id AND m.did = ?))"
        " ORDER BY s.uri LIMIT ?",
        (did, after or "", authority, authority, int(owned), did, did, limit),
    ).fetchall()
    return [(uri, bool(is_owner)) for uri, is_owner in rows]


def is_member_anywhere(conn: sqlite3.Connection, did: str) -> bool:
    return conn.execute("SELECT 1 FROM space_members WHERE did = ? LIMIT 1", (did,)).fetchone() is not None
