"""Synced spaces (engram/sync): registration, space-level position, per-repo state and health.

Positions move only together with the memories they cover (`apply_repo_changes` is one transaction), so a
crash can never leave a position past writes that were not committed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from engram.errors import InvalidInput
from engram.store import memory_writes
from engram.store.dialect import dialect_of
from engram.store.models import MemoryWrite
from engram.store.prepared_memories import now_iso
from engram.store.spaces import create_space, get_space, require_space


@dataclass(frozen=True)
class SyncedSpace:
    uri: str
    authority: str
    access_kind: str
    access: dict[str, Any]
    last_space_rev: str | None
    last_full_sync: str | None
    last_error: str | None


@dataclass(frozen=True)
class RepoState:
    repo: str
    rev: str | None
    set_state: bytes | None
    space_rev: str | None
    last_success: str | None
    last_error: str | None
    failures: int
    retry_after: float | None


_SPACE_COLS = (
    "s.uri, s.authority, y.access_kind, y.access_json, y.last_space_rev, y.last_full_sync, y.last_error"
)


def _synced(row: tuple[Any, ...]) -> SyncedSpace:
    return SyncedSpace(row[0], row[1], row[2], orjson.loads(row[3]), row[4], row[5], row[6])


def add_synced_space(
    conn: sqlite3.Connection, uri: str, access_kind: str, access: dict[str, Any]
) -> SyncedSpace:
    """Register (or re-register, replacing the access method of) a synced space."""
    space = get_space(conn, uri)
    if space is None or space.deleted:
        space = create_space(conn, uri, "synced")
    elif space.kind != "synced":
        raise InvalidInput(f"{uri} is a hosted space; it cannot also be synced", "SpaceExists")
    conn.execute(
        "INSERT INTO synced_spaces (space_id, access_kind, access_json, created_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (space_id) DO UPDATE SET access_kind = excluded.access_kind,"
        " access_json = excluded.access_json",
        (space.id, access_kind, orjson.dumps(access).decode(), now_iso()),
    )
    return get_synced_space(conn, uri)  # type: ignore[return-value]


def get_synced_space(conn: sqlite3.Connection, uri: str) -> SyncedSpace | None:
    row = conn.execute(
        f"SELECT {_SPACE_COLS} FROM synced_spaces y JOIN spaces s ON s.id = y.space_id"
        " WHERE s.uri = ? AND s.deleted_at IS NULL",
        (uri,),
    ).fetchone()
    return _synced(row) if row else None


def list_synced_spaces(conn: sqlite3.Connection) -> list[SyncedSpace]:
    rows = conn.execute(
        f"SELECT {_SPACE_COLS} FROM synced_spaces y JOIN spaces s ON s.id = y.space_id"
        " WHERE s.deleted_at IS NULL ORDER BY s.uri"
    )
    return [_synced(row) for row in rows]


def note_space(
    conn: sqlite3.Connection,
    uri: str,
    *,
    space_rev: str | None = None,
    full_sync: bool = False,
    error: str | None = None,
) -> None:
    space = require_space(conn, uri)
    if space_rev is not None:
        conn.execute(
            "UPDATE synced_spaces SET last_space_rev = ? WHERE space_id = ?"
            " AND (last_space_rev IS NULL OR last_space_rev < ?)",
            (space_rev, space.id, space_rev),
        )
    if full_sync:
        conn.execute(
            "UPDATE synced_spaces SET last_full_sync = ?, last_error = NULL WHERE space_id = ?",
            (now_iso(), space.id),
        )
    if error is not None:
        conn.execute("UPDATE synced_spaces SET last_error = ? WHERE space_id = ?", (error[:500], space.id))


def repo_states(conn: sqlite3.Connection, uri: str) -> dict[str, RepoState]:
    space = require_space(conn, uri)
    rows = conn.execute(
        "SELECT repo, rev, set_state, space_rev, last_success, last_error, failures, retry_after"
        " FROM sync_state WHERE space_id = ? ORDER BY repo",
        (space.id,),
    )
    return {row[0]: RepoState(*row) for row in rows}


def apply_repo_changes(
    conn: sqlite3.Connection,
    uri: str,
    repo: str,
    upserts: Sequence[MemoryWrite],
    deletes: Sequence[str],
    position: tuple[str, bytes, str | None] | None,
    *,
    replace_all: bool = False,
) -> None:
    """Write one repo's changes and (when ``position`` = (rev, set state, space rev) is given) advance its
    position, in the caller's transaction. ``replace_all`` (a full export) deletes the author's other
    memories. Without a position (writes held back by a limit) the repo stays where it was.

    In a hosted space the repo is a member's own (docs/space-host.md#members-repos): its memories are not
    records of the authority's repo, and the author's memories that are (written through engram's own
    doors) are neither replaced nor deleted by it."""
    space = require_space(conn, uri)
    hosted = space.kind == "hosted"
    theirs = authority_repo_memories(conn, space.id, repo) if hosted else set()
    if replace_all:
        keep = {item.rkey for item in upserts}
        rows = conn.execute("SELECT rkey FROM memories WHERE space_id = ? AND author = ?", (space.id, repo))
        deletes = [*deletes, *(rkey for (rkey,) in rows if rkey not in keep)]
    deletes = [rkey for rkey in deletes if rkey not in theirs]
    upserts = [item for item in upserts if item.rkey not in theirs]
    if deletes:
        memory_writes.delete_memories(
            conn, uri, [(repo, rkey) for rkey in deletes], authority_repo=not hosted
        )
    if upserts:
        memory_writes.put_memories(conn, uri, upserts, authority_repo=not hosted)
    if position is not None:
        rev, state, space_rev = position
        conn.execute(
            "INSERT INTO sync_state (space_id, repo, rev, set_hash, set_state, space_rev, updated_at,"
            " last_success, last_error, failures, retry_after) VALUES (?, ?, ?, NULL, ?, ?, ?, ?, NULL, 0, NULL)"
            " ON CONFLICT (space_id, repo) DO UPDATE SET rev = excluded.rev, set_state = excluded.set_state,"
            " space_rev = coalesce(excluded.space_rev, sync_state.space_rev), updated_at = excluded.updated_at,"
            " last_success = excluded.last_success, last_error = NULL, failures = 0, retry_after = NULL",
            (space.id, repo, rev, state, space_rev, now_iso(), now_iso()),
        )


def note_repo_failure(conn: sqlite3.Connection, uri: str, repo: str, error: str, retry_after: float) -> int:
    """Record a failed sync; returns the repo's consecutive failure count."""
    space = require_space(conn, uri)
    conn.execute(
        "INSERT INTO sync_state (space_id, repo, updated_at, last_error, failures, retry_after)"
        " VALUES (?, ?, ?, ?, 1, ?) ON CONFLICT (space_id, repo) DO UPDATE SET last_error = excluded.last_error,"
        " failures = sync_state.failures + 1, retry_after = excluded.retry_after, updated_at = excluded.updated_at",
        (space.id, repo, now_iso(), error[:500], retry_after),
    )
    return int(
        conn.execute(
            "SELECT failures FROM sync_state WHERE space_id = ? AND repo = ?", (space.id, repo)
        ).fetchone()[0]
    )


def reset_positions(conn: sqlite3.Connection, uri: str, except_repo: str | None = None) -> None:
    """Forget every repo's position (a config change): the next pass re-exports each repo in full."""
    space = require_space(conn, uri)
    conn.execute(
        "UPDATE sync_state SET rev = NULL, set_state = NULL WHERE space_id = ? AND repo IS DISTINCT FROM ?",
        (space.id, except_repo),
    )


def drop_repo(conn: sqlite3.Connection, uri: str, repo: str) -> None:
    """A repo no longer listed by the space host: its memories and state go."""
    space = require_space(conn, uri)
    hosted = space.kind == "hosted"
    theirs = authority_repo_memories(conn, space.id, repo) if hosted else set()
    rows = conn.execute("SELECT rkey FROM memories WHERE space_id = ? AND author = ?", (space.id, repo))
    keys = [(repo, rkey) for (rkey,) in rows if rkey not in theirs]
    memory_writes.delete_memories(conn, uri, keys, authority_repo=not hosted)
    conn.execute("DELETE FROM sync_state WHERE space_id = ? AND repo = ?", (space.id, repo))


def authority_repo_memories(conn: sqlite3.Connection, space_id: int, author: str) -> set[str]:
    """The rkeys of ``author``'s memories in a hosted space that are records of the authority's repo (the
    same rkey and CID there), as opposed to ones followed from the author's own repo."""
    rows = conn.execute(
        "SELECT m.rkey FROM memories m JOIN repo_records r ON r.space_id = m.space_id AND r.rkey = m.rkey"
        " AND r.cid = m.cid AND r.collection = 'garden.engram.memory' WHERE m.space_id = ? AND m.author = ?",
        (space_id, author),
    )
    return {rkey for (rkey,) in rows}


def memory_usage(conn: sqlite3.Connection, uri: str) -> tuple[int, int]:
    """(memories, text+source bytes) of a space, for the per-space write limits."""
    space = require_space(conn, uri)
    dialect = dialect_of(conn)
    text_bytes, source_bytes = dialect.byte_length("text"), dialect.byte_length("source")
    row = conn.execute(
        f"SELECT count(*), coalesce(sum({text_bytes} + coalesce({source_bytes}, 0)), 0)"
        " FROM memories WHERE space_id = ?",
        (space.id,),
    ).fetchone()
    return row[0], row[1]
