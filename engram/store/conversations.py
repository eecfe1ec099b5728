"""Conversations of the Sim memory-block shim: each message is one memory whose attrs carry
`workflowId`, `conversationKey`, `sequence`, `role` and the conversation's `simId` (docs/compat.md "Sim").

Plain functions over a connection. Messages come back in `sequence` order; conversations in the order
they were started (their first message's createdAt, then row id), as Sim lists them.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from engram.store.dialect import dialect_of
from engram.store.models import Memory
from engram.store.queries import _VIEW_COLUMNS, _memory
from engram.store.spaces import require_space


@dataclass(frozen=True)
class _Fragments:
    """The attrs expressions every query here uses, spelled for the connection's backend."""

    workflow: str
    key: str
    sim_id: str
    is_message: str  # a Sim message only when it carries a string simId too (imports may bring partial attrs)
    order: str

    @classmethod
    def of(cls, conn) -> _Fragments:
        d = dialect_of(conn)
        return cls(
            workflow=d.json_text("attrs", "workflowId"),
            key=d.json_text("attrs", "conversationKey"),
            sim_id=d.json_text("attrs", "simId"),
            is_message=f"{d.json_is_string('attrs', 'simId')} AND {d.json_is_string('attrs', 'conversationKey')}",
            order=f"ORDER BY {d.json_value('attrs', 'sequence')}, row_id",
        )


def conversation(conn: sqlite3.Connection, space_uri: str, workflow_id: str, key: str) -> list[Memory]:
    """The messages of one conversation, oldest first ([] when there is none)."""
    space = require_space(conn, space_uri)
    f = _Fragments.of(conn)
    rows = conn.execute(
        f"SELECT {_VIEW_COLUMNS} FROM memories WHERE space_id = ? AND {f.workflow} = ? AND {f.key} = ?"
        f" AND {f.is_message} {f.order}",
        (space.id, workflow_id, key),
    )
    return [_memory(row) for row in rows]


def conversation_by_id(
    conn: sqlite3.Connection, space_uri: str, workflow_id: str, sim_id: str
) -> list[Memory]:
    space = require_space(conn, space_uri)
    f = _Fragments.of(conn)
    row = conn.execute(
        f"SELECT {f.key} FROM memories WHERE space_id = ? AND {f.workflow} = ?"
        f" AND {f.sim_id} = ? AND {f.is_message} LIMIT 1",
        (space.id, workflow_id, sim_id),
    ).fetchone()
    return conversation(conn, space_uri, workflow_id, row[0]) if row else []


def conversations(
    conn: sqlite3.Connection, space_uri: str, workflow_id: str, key_contains: str | None, limit: int
) -> list[list[Memory]]:
    """Up to `limit` conversations of the workflow whose key contains `key_contains` (case-sensitive, like
    SQL LIKE '%q%' on Postgres), oldest conversation first."""
    space = require_space(conn, space_uri)
    f = _Fragments.of(conn)
    where, params = f"space_id = ? AND {f.workflow} = ? AND {f.is_message}", [space.id, workflow_id]
    if key_contains:
        where += f" AND {dialect_of(conn).contains(f.key)}"
        params.append(key_contains)
    keys = conn.execute(
        f"SELECT {f.key} FROM memories WHERE {where} AND {f.key} IS NOT NULL"
        f" GROUP BY {f.key} ORDER BY min(created_ms), min(row_id) LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [conversation(conn, space_uri, workflow_id, key) for (key,) in keys]
