"""Conversations of the Sim memory-block shim: each message is one memory whose attrs carry the
conversation's scope (`workflowId` for Sim's first generation, `workspaceId` for the current one),
`conversationKey`, `sequence`, `role` and the conversation's `simId` (docs/compat.md "Sim").

Plain functions over a connection. A conversation is addressed by its scope and key, as Sim's routes
address rows (`eq(memory.key, id)`). Messages come back in `sequence` order; conversations in the order
they were started (their first message's createdAt, then row id), as Sim lists them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from engram.errors import UnknownSpace
from engram.store.dialect import dialect_of, pipelined
from engram.store.memory_reads import _VIEW_COLUMNS, _memory
from engram.store.models import Memory, Space
from engram.store.spaces import COLUMNS as SPACE_COLUMNS
from engram.store.spaces import require_space, space_from_row

SCOPES = ("workflowId", "workspaceId")  # the attrs a conversation's scope may live in


@dataclass(frozen=True)
class Scope:
    """Where a conversation lives inside a space: the attr naming the scope, and its value."""

    attr: str
    value: str

    def __post_init__(self) -> None:
        if self.attr not in SCOPES:  # spliced into SQL below: only the known names
            raise ValueError(f"unknown conversation scope {self.attr!r}")


@dataclass(frozen=True)
class _Fragments:
    """The attrs expressions every query here uses, spelled for the connection's backend."""

    scope: str
    key: str
    is_message: str  # a Sim message only when it carries a string simId too (imports may bring partial attrs)
    order: str

    @classmethod
    def of(cls, conn: sqlite3.Connection, scope: Scope) -> _Fragments:
        d = dialect_of(conn)
        return cls(
            scope=d.json_text("attrs", scope.attr),
            key=d.json_text("attrs", "conversationKey"),
            is_message=f"{d.json_is_string('attrs', 'simId')} AND {d.json_is_string('attrs', 'conversationKey')}",
            order=f"ORDER BY {d.json_value('attrs', 'sequence')}, row_id",
        )


def conversation(conn: sqlite3.Connection, space_uri: str, scope: Scope, key: str) -> list[Memory]:
    """The messages of one conversation, oldest first ([] when there is none)."""
    return conversation_in(conn, require_space(conn, space_uri), scope, key)


def conversation_in(conn: sqlite3.Connection, space: Space, scope: Scope, key: str) -> list[Memory]:
    """`conversation` of a space the caller has looked up in this transaction."""
    dialect = dialect_of(conn)
    sql = _CONVERSATION_SQL.get((dialect, scope.attr, False)) or _conversation_sql(conn, scope)
    return [_memory(row) for row in conn.execute(sql, (space.id, scope.value, key))]


def space_and_conversation(
    conn: sqlite3.Connection, space_uri: str, scope: Scope, key: str
) -> tuple[Space, list[Memory]]:
    """`require_space` and `conversation_in` of it, sent together: on PostgreSQL one round trip for both
    (the conversation's statement names the space by its URI, so it need not wait for the space's id)."""
    dialect = dialect_of(conn)
    sql = _CONVERSATION_SQL.get((dialect, scope.attr, True)) or _conversation_sql(conn, scope, by_uri=True)
    with pipelined(conn):
        space_row = conn.execute(f"SELECT {SPACE_COLUMNS} FROM spaces WHERE uri = ?", (space_uri,))
        rows = conn.execute(sql, (space_uri, scope.value, key))
        found = space_row.fetchone()
        messages = rows.fetchall()
    space = space_from_row(found) if found else None
    if space is None or space.deleted:
        raise UnknownSpace(f"unknown space: {space_uri}")  # as require_space
    return space, [_memory(row) for row in messages]


# One statement text per backend, scope attr and way of naming the space, built once: every Sim append
# reads its conversation.
_CONVERSATION_SQL: dict[tuple[object, str, bool], str] = {}


def _conversation_sql(conn: sqlite3.Connection, scope: Scope, *, by_uri: bool = False) -> str:
    f = _Fragments.of(conn, scope)
    space = "(SELECT id FROM spaces WHERE uri = ?)" if by_uri else "?"
    sql = (
        f"SELECT {_VIEW_COLUMNS} FROM memories WHERE space_id = {space} AND {f.scope} = ? AND {f.key} = ?"
        f" AND {f.is_message} {f.order}"
    )
    _CONVERSATION_SQL[(dialect_of(conn), scope.attr, by_uri)] = sql
    return sql


def conversations(
    conn: sqlite3.Connection,
    space_uri: str,
    scope: Scope,
    key_matches: Callable[[str], bool] | None,
    limit: int,
) -> list[list[Memory]]:
    """Up to `limit` conversations of the scope whose key `key_matches` (all when None), oldest first.

    The keys are matched here rather than in SQL: Sim's `like(memory.key, '%q%')` is PostgreSQL's
    case-sensitive LIKE, which SQLite's LIKE is not; the caller builds the matcher."""
    space = require_space(conn, space_uri)
    if limit <= 0:  # PostgreSQL's LIMIT 0: nothing
        return []
    f = _Fragments.of(conn, scope)
    keys = conn.execute(
        f"SELECT {f.key} FROM memories WHERE space_id = ? AND {f.scope} = ? AND {f.is_message}"
        f" GROUP BY {f.key} ORDER BY min(created_ms), min(row_id)",
        (space.id, scope.value),
    )
    chosen: list[str] = []
    for (key,) in keys:
        if key_matches is None or key_matches(key):
            chosen.append(key)
            if len(chosen) >= limit:
                break
    return [conversation(conn, space_uri, scope, key) for key in chosen]
