"""Turn a verified repo pull into store writes, in one transaction with the repo's new position.

- ``garden.engram.memory`` records become memories (`records.memory_from_record`); one that no longer fits
  (no text) is deleted;
- ``garden.engram.config/self`` counts only from the space's authority; a change of model or ``next``
  resets every other repo's position, so the rest of the pass re-exports them in full;
- per-space limits (ENGRAM_LIMIT_MEMORIES / ENGRAM_LIMIT_BYTES): new memories that would not fit are held
  back and the position is not advanced, so they are pulled again on the next sync and nothing is lost.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from engram.errors import InvalidInput
from engram.store import spaces as store_spaces
from engram.store import synced as store_synced
from engram.store.models import MemoryWrite
from engram.store.prepared_memories import prepare_write
from engram.sync.records import CONFIG, CONFIG_RKEY, MEMORY, config_from_record, memory_from_record
from engram.sync.repo_pull import RepoPull


@dataclass(frozen=True)
class Applied:
    config_changed: bool
    held_back: int
    invalid: int = 0  # memory records of the pull that are not memories engram can store (not indexed)


def apply_pull(
    conn: sqlite3.Connection,
    uri: str,
    repo: str,
    pull: RepoPull,
    space_rev: str | None,
    limit_memories: int,
    limit_bytes: int,
) -> Applied:
    space = store_spaces.require_space(conn, uri)
    config_changed = False
    config_path = f"{CONFIG}/{CONFIG_RKEY}"
    if repo == space.authority and config_path in pull.records:
        config = config_from_record(pull.records[config_path][1])
        if config is not None:
            before = space.config
            store_spaces.set_config(
                conn,
                uri,
                config.active,
                document_prefix=config.document_prefix,
                query_prefix=config.query_prefix,
                next=config.next,
                record=config.record,
            )
            config_changed = before is None or (before.active, before.next) != (config.active, config.next)
            if config_changed:
                store_synced.reset_positions(conn, uri, except_repo=repo)
    upserts: list[MemoryWrite] = []
    deletes: list[str] = []
    invalid = 0
    for path, (cid, value) in pull.records.items():
        collection, rkey = path.split("/", 1)
        if collection != MEMORY:
            continue
        memory = memory_from_record(repo, rkey, cid, value)
        if memory is not None and _storable(memory):
            upserts.append(memory)
        else:
            deletes.append(rkey)  # not (or no longer) a memory engram can index
            invalid += 1
    deletes += [path.split("/", 1)[1] for path in pull.deleted if path.startswith(MEMORY + "/")]
    upserts, held_back = _within_limits(
        conn, space.id, uri, repo, upserts, deletes, limit_memories, limit_bytes
    )
    position = None if held_back else (pull.rev, pull.state, space_rev)
    store_synced.apply_repo_changes(conn, uri, repo, upserts, deletes, position, replace_all=pull.full)
    return Applied(config_changed, held_back, invalid)


def _storable(memory: MemoryWrite) -> bool:
    """One malformed record (bad createdAt, oversized text...) must not fail its whole repo."""
    try:
        prepare_write(memory)
    except InvalidInput:
        return False
    return True


def _within_limits(
    conn,
    space_id: int,
    uri: str,
    repo: str,
    upserts: list[MemoryWrite],
    deletes: list[str],
    limit_memories: int,
    limit_bytes: int,
) -> tuple[list[MemoryWrite], int]:
    if not (limit_memories or limit_bytes) or not upserts:
        return upserts, 0
    existing = {
        rkey
        for (rkey,) in conn.execute(
            "SELECT rkey FROM memories WHERE space_id = ? AND author = ?", (space_id, repo)
        )
    }
    count, size = store_synced.memory_usage(conn, uri)
    count -= sum(1 for rkey in deletes if rkey in existing)
    kept, held = [], 0
    for item in upserts:
        grows = item.rkey not in existing
        item_bytes = len(item.text.encode()) + len((item.source or "").encode())
        if grows and (
            (limit_memories and count + 1 > limit_memories)
            or (limit_bytes and size + item_bytes > limit_bytes)
        ):
            held += 1
            continue
        kept.append(item)
        if grows:
            count, size = count + 1, size + item_bytes
    return kept, held
