"""Conversations of the Sim memory-block shim: each message is one memory whose attrs carry
`workflowId`, `conversationKey`, `sequence`, `role` and the conversation's `simId` (docs/compat.md "Sim").

Plain functions over a connection. Messages come back in `sequence` order; conversations in the order
they were started (their first message's createdAt, then row id), as Sim lists them.
"""

from __future__ import annotations

import sqlite3

from engram.store.models import Memory
from engram.store.queries import _VIEW_COLUMNS, _memory
from engram.store.spaces import require_space

_WORKFLOW = "json_extract(attrs, '$.workflowId')"
_KEY = "json_extract(attrs, '$.conversationKey')"
_ORDER = "ORDER BY json_extract(attrs, '$.sequence'), row_id"


def conversation(conn: sqlite3.Connection, space_uri: str, workflow_id: str, key: str) -> list[Memory]:
    """The messages of one conversation, oldest first ([] when there is none)."""
    space = require_space(conn, space_uri)
    rows = conn.execute(
        f"SELECT {_VIEW_COLUMNS} FROM memories WHERE space_id = ? AND {_WORKFLOW} = ? AND {_KEY} = ? {_ORDER}",
        (space.id, workflow_id, key),
    )
    return [_memory(row) for row in rows]


def conversation_by_id(
    conn: sqlite3.Connection, space_uri: str, workflow_id: str, sim_id: str
) -> list[Memory]:
    space = require_space(conn, space_uri)
    row = conn.execute(
        f"SELECT {_KEY} FROM memories WHERE space_id = ? AND {_WORKFLOW} = ?"
        " AND json_extract(attrs, '$.simId') = ? LIMIT 1",
        (space.id, workflow_id, sim_id),
    ).fetchone()
    return conversation(conn, space_uri, workflow_id, row[0]) if row else []


def conversations(
    conn: sqlite3.Connection, space_uri: str, workflow_id: str, key_contains: str | None, limit: int
) -> list[list[Memory]]:
    """Up to `limit` conversations of the workflow whose key contains `key_contains` (case-sensitive, like
    SQL LIKE '%q%' on Postgres), oldest conversation first."""
    space = require_space(conn, space_uri)
    where, params = f"space_id = ? AND {_WORKFLOW} = ?", [space.id, workflow_id]
    if key_contains:
        where += f" AND instr({_KEY}, ?) > 0"
        params.append(key_contains)
    keys = conn.execute(
        f"SELECT {_KEY} FROM memories WHERE {where} AND {_KEY} IS NOT NULL"
        f" GROUP BY {_KEY} ORDER BY min(created_ms), min(row_id) LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [conversation(conn, space_uri, workflow_id, key) for (key,) in keys]
