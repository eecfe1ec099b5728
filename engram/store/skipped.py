"""Which memories are not indexed under the space's active model, and why.

The rule lives in `skip_reason` only; the bulk recompute after a config change applies the same Python
function to every row of the space (on either backend), so per-write bookkeeping and recompute cannot
disagree.
A model change needs no re-fetch: every memory keeps its vector and model key whatever the config, so
the recompute is one INSERT ... SELECT over the space's rows.
"""

from __future__ import annotations

import sqlite3

NO_MODEL = "no_model"  # the space has no config yet
NO_EMBEDDING = "no_embedding"  # the memory carries no vector
MODEL_MISMATCH = "model_mismatch"  # the memory's vector is for another model, digest or dims


def skip_reason(
    active_key: str | None, vector_key: str | None, next_vector_key: str | None = None
) -> str | None:
    """Why a memory is not indexed under `active_key`, or None if it is. Its nextEmbedding counts too: after
    a model change is promoted, memories written during the change are indexed through that vector."""
    if active_key is None:
        return NO_MODEL
    if active_key in (vector_key, next_vector_key):
        return None
    if vector_key is None and next_vector_key is None:
        return NO_EMBEDDING
    return MODEL_MISMATCH


def mark(conn: sqlite3.Connection, space_id: int, author: str, rkey: str, reason: str | None) -> None:
    if reason is None:
        conn.execute(
            "DELETE FROM skipped WHERE space_id = ? AND author = ? AND rkey = ?", (space_id, author, rkey)
        )
    else:
        conn.execute(
            "INSERT INTO skipped (space_id, author, rkey, reason) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (space_id, author, rkey) DO UPDATE SET reason = excluded.reason",
            (space_id, author, rkey, reason),
        )


def recompute(conn: sqlite3.Connection, space_id: int, active_key: str | None) -> None:
    # Only the distinct (model key, next model key) pairs go through Python, not every row: a space holds a
    # handful of them, so the recompute stays one INSERT ... SELECT per pair on the database side.
    conn.execute("DELETE FROM skipped WHERE space_id = ?", (space_id,))
    pairs = conn.execute(
        "SELECT DISTINCT model_key, next_model_key FROM memories WHERE space_id = ?", (space_id,)
    ).fetchall()
    for vector_key, next_vector_key in pairs:
        reason = skip_reason(active_key, vector_key, next_vector_key)
        if reason is not None:
            conn.execute(
                "INSERT INTO skipped (space_id, author, rkey, reason) SELECT space_id, author, rkey, ?"
                " FROM memories WHERE space_id = ? AND model_key IS NOT DISTINCT FROM ?"
                " AND next_model_key IS NOT DISTINCT FROM ?",
                (reason, space_id, vector_key, next_vector_key),
            )


def counts_by_author(conn: sqlite3.Connection, space_id: int) -> list[tuple[str, int]]:
    rows = conn.execute(
        "SELECT author, count(*) FROM skipped WHERE space_id = ? GROUP BY author ORDER BY author", (space_id,)
    )
    return [(author, count) for author, count in rows]


def counts_by_reason(conn: sqlite3.Connection, space_id: int) -> dict[str, int]:
    rows = conn.execute(
        "SELECT reason, count(*) FROM skipped WHERE space_id = ? GROUP BY reason", (space_id,)
    )
    return dict(rows.fetchall())
