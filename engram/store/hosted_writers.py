"""The members' repos of a hosted space, as its space host tracks them from the notifyWrite calls of their
repo hosts (docs/space-host.md#members-repos). Plain functions over a connection."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from engram.store import repo as store_repo
from engram.store.spaces import require_space


@dataclass(frozen=True)
class WriterState:
    repo: str
    repo_rev: str
    hash: str | None  # base64
    space_rev: str
    prev_space_rev: str | None  # the space's newest rev before this one


def _space_head(conn: sqlite3.Connection, space_id: int) -> str | None:
    """The space's newest rev: its authority repo's head or a member write, whichever is later."""
    head = store_repo.get_head(conn, space_id)
    row = conn.execute("SELECT MAX(space_rev) FROM hosted_writers WHERE space_id = ?", (space_id,)).fetchone()
    revs = [r for r in (head.rev if head else None, row[0]) if r is not None]
    return max(revs) if revs else None


def record_write(
    conn: sqlite3.Connection, space_uri: str, repo: str, repo_rev: str, hash_b64: str | None
) -> WriterState | None:
    """Track ``repo`` at ``repo_rev`` with a fresh space rev after every earlier one; None when the rev is
    not newer than the one tracked (a late or repeated notification changes nothing)."""
    space = require_space(conn, space_uri)
    row = conn.execute(
        "SELECT repo_rev FROM hosted_writers WHERE space_id = ? AND repo = ?", (space.id, repo)
    ).fetchone()
    if row is not None and row[0] >= repo_rev:
        return None
    prev = _space_head(conn, space.id)
    space_rev = store_repo._next_rev(prev)  # after every earlier rev, whichever process's clock is ahead
    conn.execute(
        "INSERT INTO hosted_writers (space_id, repo, repo_rev, hash, space_rev) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (space_id, repo) DO UPDATE SET repo_rev = excluded.repo_rev, hash = excluded.hash,"
        " space_rev = excluded.space_rev",
        (space.id, repo, repo_rev, hash_b64, space_rev),
    )
    return WriterState(repo, repo_rev, hash_b64, space_rev, prev)


def writers_after(conn: sqlite3.Connection, space_id: int, after: str, limit: int) -> list[WriterState]:
    rows = conn.execute(
        "SELECT repo, repo_rev, hash, space_rev FROM hosted_writers WHERE space_id = ? AND space_rev > ?"
        " ORDER BY space_rev LIMIT ?",
        (space_id, after, limit),
    ).fetchall()
    return [WriterState(repo, rev, h, srev, None) for repo, rev, h, srev in rows]


def forget_writer(conn: sqlite3.Connection, space_uri: str, repo: str) -> None:
    """No longer track ``repo`` (its member lost write access): listRepos stops listing it."""
    space = require_space(conn, space_uri)
    conn.execute("DELETE FROM hosted_writers WHERE space_id = ? AND repo = ?", (space.id, repo))


def followed_repos(conn: sqlite3.Connection, space_uri: str) -> dict[str, str | None]:
    """{member repo: its space rev, or None} of a hosted space's writers, the repos engram follows to
    index them (engram/sync, docs/space-host.md#members-repos): the tracked ones, and every member with
    write access, whose repo host's notification may have been lost (the poll finds its writes)."""
    space = require_space(conn, space_uri)
    tracked = conn.execute("SELECT repo, space_rev FROM hosted_writers WHERE space_id = ?", (space.id,))
    repos: dict[str, str | None] = dict(tracked.fetchall())
    writers = conn.execute("SELECT did FROM space_members WHERE space_id = ? AND can_write = 1", (space.id,))
    for (did,) in writers.fetchall():
        repos.setdefault(did, None)
    return repos


def followed_spaces(conn: sqlite3.Connection) -> list[str]:
    """The live hosted spaces with a writer to follow, or with member memories left to drop."""
    rows = conn.execute(
        "SELECT s.uri FROM spaces s WHERE s.kind = 'hosted' AND s.deleted_at IS NULL AND (EXISTS"
        " (SELECT 1 FROM hosted_writers w WHERE w.space_id = s.id) OR EXISTS"
        " (SELECT 1 FROM space_members m WHERE m.space_id = s.id AND m.can_write = 1) OR EXISTS"
        " (SELECT 1 FROM sync_state y WHERE y.space_id = s.id)) ORDER BY s.uri"
    )
    return [uri for (uri,) in rows]
