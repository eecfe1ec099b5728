"""Memory writes: batch upsert by (author, rkey) and deletes. Plain functions over the writer's connection.

An update never rewrites a row in place: the old row is deleted (leaving a tombstone) and the new version
gets a new, larger row id. That keeps the index delta simple ("rows after X, tombstones since G") and
means a row id always names one immutable version of a memory. A batch bumps the space's generation once,
and only if it changed something, so re-importing the same file is a no-op.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import orjson

from engram.errors import InvalidInput
from engram.store import repo, skipped
from engram.store.models import MemoryRecord, MemoryWrite, Space
from engram.store.spaces import bump_generation, require_space
from engram.store.tid import new_tid
from engram.store.uris import memory_uri
from engram.store.writes import PreparedMemory, now_iso, prepare_write


def _prepare_all(items: Sequence[MemoryWrite]) -> list[PreparedMemory]:
    prepared = []
    for index, item in enumerate(items):
        try:
            prepared.append(prepare_write(item))
        except InvalidInput as exc:
            raise InvalidInput(f"memories[{index}]: {exc.message}", exc.error) from None
    return prepared


def _resolve_rkey(conn: sqlite3.Connection, space: Space, memory: PreparedMemory) -> str:
    """The rkey to write: given, remembered for the idempotency key, or a fresh TID."""
    if memory.idempotency_key is not None:
        row = conn.execute(
            "SELECT author, rkey FROM import_keys WHERE space_id = ? AND key = ?",
            (space.id, memory.idempotency_key),
        ).fetchone()
        if row is not None:
            if row[0] != memory.author or (memory.rkey is not None and memory.rkey != row[1]):
                raise InvalidInput(
                    f"idempotency key {memory.idempotency_key!r} already names another memory",
                    "IdempotencyConflict",
                )
            return row[1]
    return memory.rkey or new_tid()


def _claim_rkey(conn: sqlite3.Connection, space: Space, rkey: str) -> None:
    """A hosted space's memories are records of one repo (the authority's, docs/space-host.md), keyed by
    rkey alone: a new memory may not take an rkey another author's memory holds."""
    if repo.record_cid(conn, space.id, repo.MEMORY_COLLECTION, rkey) is not None:
        raise InvalidInput(
            f"rkey {rkey} is already used by another author's memory in this space", "RkeyTaken"
        )


def _remove_row(conn: sqlite3.Connection, space_id: int, row_id: int, generation: int) -> None:
    conn.execute("DELETE FROM memories WHERE row_id = ?", (row_id,))  # memory_tags go by ON DELETE CASCADE
    conn.execute(
        "INSERT INTO tombstones (space_id, generation, row_id) VALUES (?, ?, ?)",
        (space_id, generation, row_id),
    )


def _insert_row(
    conn: sqlite3.Connection, space_id: int, memory: PreparedMemory, rkey: str, uri: str, indexed_at: str
) -> int:
    row_id = conn.execute(
        "INSERT INTO memories (space_id, author, rkey, uri, cid, text, tags, source, attrs, created_at,"
        " created_ms, indexed_at, vector, model_key, next_vector, next_model_key)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING row_id",
        (space_id, memory.author, rkey, uri, memory.cid, memory.text, orjson.dumps(memory.tags).decode(),
         memory.source, memory.attrs_json, memory.created_at, memory.created_ms, indexed_at,
         memory.vector, memory.model_key, memory.next_vector, memory.next_model_key),
    ).fetchone()[0]  # fmt: skip
    conn.executemany(
        "INSERT INTO memory_tags (space_id, tag, row_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        [(space_id, tag, row_id) for tag in memory.tags],
    )
    return row_id


def put_memories(
    conn: sqlite3.Connection, space_uri: str, items: Sequence[MemoryWrite]
) -> list[MemoryRecord]:
    """Upsert memories by (author, rkey) in one transaction; returns one MemoryRecord per item, in order."""
    space = require_space(conn, space_uri)
    prepared = _prepare_all(items)
    active_key = space.config.active.key if space.config else None
    generation = space.generation + 1  # the generation this batch commits as, if it changes anything
    indexed_at = now_iso()
    changed = False
    results = []
    for memory in prepared:
        rkey = _resolve_rkey(conn, space, memory)
        uri = memory_uri(space.uri, memory.author, rkey)
        existing = conn.execute(
            "SELECT row_id, cid, attrs, model_key, next_model_key FROM memories"
            " WHERE space_id = ? AND author = ? AND rkey = ?",
            (space.id, memory.author, rkey),
        ).fetchone()
        if space.kind == "hosted" and existing is None:
            _claim_rkey(conn, space, rkey)
        if existing is not None and (existing[1], existing[2]) == (memory.cid, memory.attrs_json):
            row_id, status = existing[0], "unchanged"
            reason = skipped.skip_reason(active_key, existing[3], existing[4])
        else:
            if existing is not None:
                _remove_row(conn, space.id, existing[0], generation)
            row_id = _insert_row(conn, space.id, memory, rkey, uri, indexed_at)
            if space.kind == "hosted":
                repo.put_record(conn, space.id, repo.MEMORY_COLLECTION, rkey, memory.record_block)
            status = "created" if existing is None else "updated"
            reason = skipped.skip_reason(active_key, memory.model_key, memory.next_model_key)
            skipped.mark(conn, space.id, memory.author, rkey, reason)
            changed = True
        results.append(
            MemoryRecord(uri=uri, cid=memory.cid, row_id=row_id, author=memory.author, rkey=rkey,
                         indexed=reason is None, status=status)
        )  # fmt: skip
        if memory.idempotency_key is not None:
            conn.execute(
                "INSERT INTO import_keys (space_id, key, author, rkey) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (space.id, memory.idempotency_key, memory.author, rkey),
            )
    if changed:
        bump_generation(conn, space.id)
    return results


def delete_memories(conn: sqlite3.Connection, space_uri: str, keys: Sequence[tuple[str, str]]) -> int:
    """Delete memories by (author, rkey); unknown ones are ignored. Returns how many were deleted."""
    space = require_space(conn, space_uri)
    generation = space.generation + 1
    deleted = 0
    for author, rkey in keys:
        row = conn.execute(
            "SELECT row_id FROM memories WHERE space_id = ? AND author = ? AND rkey = ?",
            (space.id, author, rkey),
        ).fetchone()
        if row is None:
            continue
        _remove_row(conn, space.id, row[0], generation)
        skipped.mark(conn, space.id, author, rkey, None)
        if space.kind == "hosted":
            repo.delete_record(conn, space.id, repo.MEMORY_COLLECTION, rkey)
        deleted += 1
    if deleted:
        bump_generation(conn, space.id)
    return deleted


def delete_memory(conn: sqlite3.Connection, space_uri: str, author: str, rkey: str) -> bool:
    return delete_memories(conn, space_uri, [(author, rkey)]) == 1


def prune_tombstones(conn: sqlite3.Connection, space_uri: str, up_to_generation: int) -> int:
    """Forget tombstones at or below `up_to_generation` (every index of the space, in every model slot, has
    applied them or been rebuilt past them). Returns how many were removed."""
    space = require_space(conn, space_uri)
    cursor = conn.execute(
        "DELETE FROM tombstones WHERE space_id = ? AND generation <= ?", (space.id, up_to_generation)
    )
    conn.execute(
        "UPDATE spaces SET tombstones_pruned_through = ? WHERE id = ? AND tombstones_pruned_through < ?",
        (up_to_generation, space.id, up_to_generation),
    )
    return cursor.rowcount
