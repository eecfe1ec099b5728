"""Rows of a space by shim document id, and the stored vectors of a set of rows.

A shim document (a GPTBots `data_id`, a retrieval-plugin `document_id`) is `attrs.documentId` of each of
its memories; a memory without one is a document of its own, named by its record key (docs/compat.md).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np

from engram.store.dialect import dialect_of
from engram.store.spaces import require_space


def document_rows(conn: sqlite3.Connection, space_uri: str, document_ids: Sequence[str]) -> list[int]:
    """Row ids of the memories of those documents in the space, ascending."""
    if not document_ids:
        return []
    space = require_space(conn, space_uri)
    dialect = dialect_of(conn)
    document_id = dialect.json_text("attrs", "documentId")
    in_ids, ids = dialect.in_list([str(d) for d in document_ids])
    rows = conn.execute(
        f"SELECT row_id FROM memories WHERE space_id = ? AND {document_id} {in_ids}"
        f" UNION SELECT row_id FROM memories WHERE space_id = ? AND rkey {in_ids}"
        f" AND {document_id} IS NULL ORDER BY row_id",
        (space.id, ids, space.id, ids),
    )
    return [row_id for (row_id,) in rows]


def row_vectors(
    conn: sqlite3.Connection,
    space_uri: str,
    row_ids: Sequence[int],
    model_key: str,
) -> tuple[np.ndarray, np.ndarray]:
    """(row ids, float32 vectors) of those rows of the space that carry a `model_key` vector; rows without
    one are left out (they are not searchable by vector either). Search filters are the callers' own,
    applied before (engram/search/filters.py)."""
    space = require_space(conn, space_uri)
    where = ["m.space_id = ?", "m.model_key = ?", "m.vector IS NOT NULL"]
    params: list[object] = [space.id, model_key]
    # CROSS JOIN makes the id list the outer loop: one primary-key lookup per id, where a plain
    # `row_id IN (...)` let the planner walk the whole space through memories_by_space (20 ms at 100k).
    id_table, ids = dialect_of(conn).id_table(row_ids, "j")
    rows = conn.execute(
        f"SELECT m.row_id, m.vector FROM {id_table} CROSS JOIN memories AS m"
        f" WHERE m.row_id = j.value AND {' AND '.join(where)}",
        [ids, *params],
    ).fetchall()
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
    ids = np.fromiter((r for r, _ in rows), dtype=np.int64, count=len(rows))
    vectors = np.stack([np.frombuffer(v, dtype="<f2") for _, v in rows]).astype(np.float32)
    return ids, vectors
