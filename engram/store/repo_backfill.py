"""Building the authority's repo of a hosted space that has none: created before engram kept repos
(migration 0003), or under an authority whose key engram did not hold until now.

Each stored memory's record is rebuilt from its row and must hash to the row's CID: the CID is the proof
that the rebuilt record is the one that was written. The row keeps the model key ``{model}@{digest}/{dims}``
rather than its parts, and a model name may itself contain ``@``, so each split is tried until the CID
matches. A memory that matches no split (none should) stays out of the repo and is counted.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

from engram.atrepo.blocks import encode_block
from engram.store import repo
from engram.store.dialect import dialect_of
from engram.store.records import cid_of_bytes, embedding_record, encode_record, memory_record


def _embedding_candidates(key: str | None, vector: bytes | None) -> list[dict[str, Any] | None]:
    if key is None or vector is None:
        return [None]
    model_digest, _, dims = key.rpartition("/")
    splits = [i for i, char in enumerate(model_digest) if char == "@"]
    return [
        embedding_record(model_digest[:i], model_digest[i + 1 :], int(dims), bytes(vector)) for i in splits
    ]


def _record_block(row: tuple[Any, ...]) -> bytes | None:
    text, tags, source, created_at, cid, vector, key, next_vector, next_key = row
    for embedding in _embedding_candidates(key, vector):
        for next_embedding in _embedding_candidates(next_key, next_vector):
            block = encode_record(
                memory_record(text=text, created_at=created_at, tags=orjson.loads(tags), source=source,
                              embedding=embedding, next_embedding=next_embedding)
            )  # fmt: skip
            if cid_of_bytes(block) == cid:
                return block
    return None


def backfill_space(conn: sqlite3.Connection, space_id: int) -> tuple[int, int]:
    """Put every stored memory (and the config) of a hosted space without a repo into its repo; returns
    (records written, memories left out). A no-op for spaces that already have a repo."""
    if conn.execute("SELECT 1 FROM repo_ops WHERE space_id = ? LIMIT 1", (space_id,)).fetchone():
        return 0, 0
    written = missing = 0
    config = conn.execute("SELECT config_json FROM spaces WHERE id = ?", (space_id,)).fetchone()
    if config and config[0]:
        repo.put_record(conn, space_id, repo.CONFIG_COLLECTION, "self", encode_block(orjson.loads(config[0])))
        written += 1
    rows = conn.execute(
        "SELECT rkey, text, tags, source, created_at, cid, vector, model_key, next_vector, next_model_key"
        " FROM memories WHERE space_id = ? ORDER BY row_id",
        (space_id,),
    )
    for rkey, *fields in rows.fetchall():
        block = _record_block(tuple(fields))
        if block is None or repo.record_cid(conn, space_id, repo.MEMORY_COLLECTION, rkey) is not None:
            missing += 1
            continue
        repo.put_record(conn, space_id, repo.MEMORY_COLLECTION, rkey, block)
        written += 1
    return written, missing


def spaces_without_repo(conn: sqlite3.Connection, authorities: list[str]) -> list[int]:
    """Live hosted spaces of these authorities (those engram can sign for) that have no repo yet."""
    in_list, authorities_param = dialect_of(conn).in_list(authorities)
    return [
        row[0]
        for row in conn.execute(
            "SELECT id FROM spaces s WHERE kind = 'hosted' AND deleted_at IS NULL"
            f" AND authority {in_list}"
            " AND NOT EXISTS (SELECT 1 FROM repo_ops o WHERE o.space_id = s.id)",
            (authorities_param,),
        )
    ]
