"""What an in-memory keyword index (engram/search/keyword_index.py) is built and caught up from: the
rows of a space after a row id, and the row ids removed since a generation, in one read snapshot."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import orjson

from engram.search.rows import DeltaUnavailable
from engram.store.spaces import require_space


@dataclass(frozen=True)
class KeywordDelta:
    generation: int
    added: list[
        tuple[int, str, int, tuple[str, ...], str, str | None]
    ]  # row_id, author, created_ms, tags, text, source
    deleted: list[int]


def read_keyword_delta(
    conn: sqlite3.Connection, space_uri: str, after_row_id: int, since_generation: int
) -> KeywordDelta:
    """Rows after `after_row_id` and removals after `since_generation` (< 0: a full load). Raises
    `DeltaUnavailable` when the removals were pruned since: the caller rebuilds."""
    space = require_space(conn, space_uri)
    deleted: list[int] = []
    if since_generation >= 0:
        pruned = conn.execute(
            "SELECT tombstones_pruned_through FROM spaces WHERE id = ?", (space.id,)
        ).fetchone()[0]
        if since_generation < pruned:
            raise DeltaUnavailable(f"deletions up to generation {pruned} were pruned; rebuild {space_uri}")
        deleted = [
            r
            for (r,) in conn.execute(
                "SELECT row_id FROM tombstones WHERE space_id = ? AND generation > ?",
                (space.id, since_generation),
            )
        ]
    rows = conn.execute(
        "SELECT row_id, author, created_ms, tags, text, source FROM memories INDEXED BY memories_by_space"
        " WHERE space_id = ? AND row_id > ? ORDER BY row_id",
        (space.id, after_row_id),
    ).fetchall()
    added = [(r, a, c, () if t == "[]" else tuple(orjson.loads(t)), x, s) for r, a, c, t, x, s in rows]
    return KeywordDelta(space.generation, added, deleted)
