"""Memory writes: batch upsert by (author, rkey) and deletes. Plain functions over the writer's connection.

An update never rewrites a row in place: the old row is deleted (leaving a tombstone) and the new version
gets a new, larger row id. That keeps the index delta simple ("rows after X, tombstones since G") and
means a row id always names one immutable version of a memory. A batch bumps the space's generation once,
and only if it changed something, so re-importing the same file is a no-op.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from engram.errors import InvalidInput
from engram.store import repo, skipped
from engram.store.dialect import pipelined
from engram.store.models import Memory, MemoryRecord, MemoryWrite, Space
from engram.store.prepared_memories import PreparedMemory, now_iso, prepare_write
from engram.store.spaces import bump_generation, require_space
from engram.store.uris import memory_uri
from engram.store.write_batch import SentReads, read_batch, send_current_rows


def _prepare_all(items: Sequence[MemoryWrite]) -> list[PreparedMemory]:
    prepared = []
    for index, item in enumerate(items):
        try:
            prepared.append(prepare_write(item))
        except InvalidInput as exc:
            raise InvalidInput(f"memories[{index}]: {exc.message}", exc.name) from None
    return prepared


# Rows are named by their URI (unique), not their row id: a batch's writes then never wait for an id
# (RETURNING) before the next statement, so on PostgreSQL they are pipelined (engram/store/dialect.py).
def _remove_row(conn: sqlite3.Connection, space_id: int, uri: str, generation: int) -> None:
    conn.execute(
        "INSERT INTO tombstones (space_id, generation, row_id) SELECT ?, ?, row_id FROM memories WHERE uri = ?",
        (space_id, generation, uri),
    )
    conn.execute("DELETE FROM memories WHERE uri = ?", (uri,))  # memory_tags go by ON DELETE CASCADE


def _insert_row(
    conn: sqlite3.Connection, space_id: int, memory: PreparedMemory, rkey: str, uri: str, indexed_at: str
) -> None:
    conn.execute(
        "INSERT INTO memories (space_id, author, rkey, uri, cid, text, tags, source, attrs, created_at,"
        " created_ms, indexed_at, vector, model_key, next_vector, next_model_key)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (space_id, memory.author, rkey, uri, memory.cid, memory.text, orjson.dumps(memory.tags).decode(),
         memory.source, memory.attrs_json, memory.created_at, memory.created_ms, indexed_at,
         memory.vector, memory.model_key, memory.next_vector, memory.next_model_key),
    )  # fmt: skip
    if memory.tags:  # most writes carry none: no statement to prepare and run for nothing
        conn.executemany(
            "INSERT INTO memory_tags (space_id, tag, row_id) SELECT ?, ?, row_id FROM memories WHERE uri = ?"
            " ON CONFLICT DO NOTHING",
            [(space_id, tag, uri) for tag in memory.tags],
        )


def put_memories(
    conn: sqlite3.Connection,
    space_uri: str,
    items: Sequence[MemoryWrite],
    *,
    authority_repo: bool = True,
    space: Space | None = None,
    written: dict[str, Memory] | None = None,
) -> list[MemoryRecord]:
    """Upsert memories by (author, rkey) in one transaction; returns one MemoryRecord per item, in order.
    In a hosted space they are records of the authority's repo too, unless ``authority_repo`` is False:
    memories followed from a member's own repo (docs/space-host.md#members-repos). ``space``: the live
    space `space_uri` as the caller read it in this transaction, with nothing written to it since (its
    generation is the one this batch follows), which spares a second lookup (a round trip on PostgreSQL).
    ``written``: filled with each written URI's current row, read in the statement that reads the new row
    ids anyway (for a caller that answers with them: no second read)."""
    return send_memories(
        conn, space_uri, items, authority_repo=authority_repo, space=space, written=written
    )()


def send_memories(
    conn: sqlite3.Connection,
    space_uri: str,
    items: Sequence[MemoryWrite],
    *,
    authority_repo: bool = True,
    space: Space | None = None,
    written: dict[str, Memory] | None = None,
    sent: SentReads | None = None,
) -> Callable[[], list[MemoryRecord]]:
    """`put_memories` up to its last read, the new rows' ids, which is sent and not waited for in a
    PostgreSQL writer's pipelined transaction (engram/store/postgres/connection.py): calling the result
    reads it and returns the records (filling ``written``). A write function that returns that call as its
    `Deferred` result (engram/store/database.py) waits for no answer of its own there. Elsewhere the read
    is made here, and the call only builds the records. ``sent``: the batch's reads, sent ahead
    (engram/store/write_batch.py `send_reads`)."""
    if space is None or space.uri != space_uri:
        space = require_space(conn, space_uri)
    in_repo = space.kind == "hosted" and authority_repo
    prepared = _prepare_all(items)
    active_key = space.config.active.key if space.config else None
    generation = space.generation + 1  # the generation this batch commits as, if it changes anything
    indexed_at = now_iso()
    changed = False
    # The reads for the whole batch first, then writes that (on PostgreSQL) do not wait for each answer,
    # then the new rows' ids in one read (docs/scale-out.md#what-differs-measured).
    outcomes = []
    with pipelined(conn):
        view = read_batch(conn, space, prepared, sent)
        for memory, rkey in zip(prepared, view.rkeys, strict=True):
            if isinstance(rkey, InvalidInput):
                raise rkey
            uri = memory_uri(space.uri, memory.author, rkey)
            existing = view.rows.get(uri)
            if in_repo and existing is None and rkey in view.records:
                # A hosted space's memories are records of one repo (the authority's, docs/space-host.md),
                # keyed by rkey alone: a new memory may not take an rkey another author's memory holds.
                raise InvalidInput(
                    f"rkey {rkey} is already used by another author's memory in this space", "RkeyTaken"
                )
            if existing is not None and (existing.cid, existing.attrs) == (memory.cid, memory.attrs_json):
                status = "unchanged"
                reason = skipped.skip_reason(active_key, existing.model_key, existing.next_model_key)
            else:
                if existing is not None:
                    _remove_row(conn, space.id, uri, generation)
                _insert_row(conn, space.id, memory, rkey, uri, indexed_at)
                view.wrote_row(uri, memory)
                if in_repo:
                    prev, block = view.records.get(rkey), memory.record_block
                    view.records[rkey] = repo.write_record(
                        conn, space.id, repo.MEMORY_COLLECTION, rkey, block, prev
                    )
                status = "created" if existing is None else "updated"
                reason = skipped.skip_reason(active_key, memory.model_key, memory.next_model_key)
                skipped.mark(conn, space.id, memory.author, rkey, reason)
                changed = True
            outcomes.append((memory, rkey, uri, reason, status))
            if memory.idempotency_key is not None:
                conn.execute(
                    "INSERT INTO import_keys (space_id, key, author, rkey) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (space.id, memory.idempotency_key, memory.author, rkey),
                )
        if changed:  # its answer is not needed: it goes out with the writes, unwaited for
            conn.execute("UPDATE spaces SET generation = generation + 1 WHERE id = ?", (space.id,))
        # A memory written twice in one batch reports its final row, the one that stays.
        uris = [uri for _, _, uri, _, _ in outcomes]
        answer = send_current_rows(conn, uris, whole=written is not None)
        if not getattr(conn, "pipelined", False):  # nothing to gain by waiting later
            answer = _now(answer())

    def records() -> list[MemoryRecord]:
        rows = answer()
        if written is None:
            row_ids = rows
        else:
            written.update(rows)
            row_ids = {uri: memory.row_id for uri, memory in rows.items()}
        return [
            MemoryRecord(uri=uri, cid=memory.cid, row_id=row_ids[uri], author=memory.author, rkey=rkey,
                         indexed=reason is None, status=status)
            for memory, rkey, uri, reason, status in outcomes
        ]  # fmt: skip

    return records


def _now(value: Any) -> Callable[[], Any]:
    return lambda: value


def delete_memories(
    conn: sqlite3.Connection, space_uri: str, keys: Sequence[tuple[str, str]], *, authority_repo: bool = True
) -> int:
    """Delete memories by (author, rkey); unknown ones are ignored. Returns how many were deleted.
    ``authority_repo`` as for `put_memories`."""
    space = require_space(conn, space_uri)
    in_repo = space.kind == "hosted" and authority_repo
    generation = space.generation + 1
    deleted = 0
    for author, rkey in keys:
        row = conn.execute(
            "SELECT row_id FROM memories WHERE space_id = ? AND author = ? AND rkey = ?",
            (space.id, author, rkey),
        ).fetchone()
        if row is None:
            continue
        _remove_row(conn, space.id, memory_uri(space.uri, author, rkey), generation)
        skipped.mark(conn, space.id, author, rkey, None)
        if in_repo:
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
