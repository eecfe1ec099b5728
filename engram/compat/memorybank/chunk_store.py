"""The chunk rows of Memory Bank documents: selecting them by tags and dates, deleting, replacing.

Plain functions over the store writer's connection (each call runs in one transaction): a replace removes
the named documents' old chunks and inserts the new ones atomically (docs/memorybank.md "Storage").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...store import MemoryWrite, memory_writes
from ...store.spaces import require_space

Selector = tuple[tuple[str, ...], int | None, int | None]  # (all-of tags, start ms, end ms), inclusive


def _selected_keys(conn, space_id: int, tags: Sequence[str], start: int | None, end: int | None) -> list:
    """(author, rkey) of the space's memories carrying every tag, created within [start, end]."""
    where: list[str] = ["space_id = ?"]
    params: list[Any] = [space_id]
    for tag in dict.fromkeys(tags):
        where.append("row_id IN (SELECT row_id FROM memory_tags WHERE space_id = ? AND tag = ?)")
        params += [space_id, tag]
    if start is not None:
        where.append("created_ms >= ?")
        params.append(start)
    if end is not None:
        where.append("created_ms <= ?")
        params.append(end)
    return conn.execute(f"SELECT author, rkey FROM memories WHERE {' AND '.join(where)}", params).fetchall()


def delete_selected(conn, space_uri: str, selectors: Sequence[Selector]) -> int:
    """Delete every memory any selector matches; returns how many went."""
    space = require_space(conn, space_uri)
    keys = {
        tuple(row)
        for tags, start, end in selectors
        for row in _selected_keys(conn, space.id, tags, start, end)
    }
    return memory_writes.delete_memories(conn, space_uri, sorted(keys))


def replace_documents(
    conn, space_uri: str, replaced: list[tuple[str, ...]], writes: list[MemoryWrite]
) -> None:
    """Drop the named documents' chunks, then insert the new ones: one transaction (the writer's)."""
    if replaced:
        delete_selected(conn, space_uri, [(tags, None, None) for tags in replaced])
    if writes:
        memory_writes.put_memories(conn, space_uri, writes)
