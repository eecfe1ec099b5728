"""`StoreIndexSource`: the store side of `engram.search.rows.IndexSource`.

A full load of a big space is one SELECT whose columns are transposed with `zip(*rows)` and whose f16
blobs are joined once and viewed with `np.frombuffer`, so the per-row Python work is a tuple unpack plus
(only for rows that have tags) one JSON decode. It runs on a reader thread, never on the event loop, and
generation, rows and tombstones come from one read snapshot so they are consistent with each other.
"""

from __future__ import annotations

import contextlib
import gc
import sqlite3
from collections.abc import Iterator
from typing import Any

import numpy as np
import orjson

from engram.search.rows import DeltaUnavailable, IndexDelta, IndexRows, KeywordDelta
from engram.store.database import Store
from engram.store.memory_writes import prune_tombstones
from engram.store.models import Space
from engram.store.spaces import require_space


def _dims_of(model_key: str) -> int:
    try:
        return int(model_key.rsplit("/", 1)[1])
    except (IndexError, ValueError):
        raise ValueError(f"not a model key: {model_key!r}") from None


def empty_rows(dims: int) -> IndexRows:
    return IndexRows(np.empty(0, np.int64), np.empty((0, dims), np.float16), [], np.empty(0, np.int64), [])


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building the rows' ~500k small objects (none of them in cycles).

    Allocating that many tuples triggers many generation-0/1 collections that each walk the growing result;
    measured on 100k x 384 this more than halved the load time (0.55 s -> 0.25 s). The pause is process-wide
    but lasts only for the load, and it is only lifted by the call that imposed it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_rows(conn: sqlite3.Connection, space_id: int, model_key: str, after_row_id: int) -> IndexRows:
    with _gc_paused():
        return _load_rows(conn, space_id, model_key, after_row_id)


def _load_rows(conn: sqlite3.Connection, space_id: int, model_key: str, after_row_id: int) -> IndexRows:
    dims = _dims_of(model_key)
    # A row belongs to `model_key` through its embedding or, during a model change, its nextEmbedding.
    rows = conn.execute(
        "SELECT row_id, CASE WHEN model_key = ?1 THEN vector ELSE next_vector END, author, created_ms, tags,"
        " attrs"
        " FROM memories INDEXED BY memories_by_space"
        " WHERE space_id = ?2 AND row_id > ?3 AND (model_key = ?1 OR next_model_key = ?1)"
        " ORDER BY row_id",
        (model_key, space_id, after_row_id),
    ).fetchall()
    if not rows:
        return empty_rows(dims)
    row_ids, blobs, authors, created_ms, tags, attrs = zip(*rows, strict=True)
    joined = b"".join(blobs)
    if len(joined) != len(rows) * dims * 2:  # the model key includes dims, so this means a corrupt row
        raise ValueError(f"stored vectors for {model_key} do not all have {dims} dims")
    return IndexRows(
        row_ids=np.array(row_ids, dtype=np.int64),
        vectors=np.frombuffer(joined, dtype="<f2").reshape(len(rows), dims),
        authors=list(authors),
        created_at=np.array(created_ms, dtype=np.int64),
        tags=[() if t == "[]" else tuple(orjson.loads(t)) for t in tags],
        attrs=[_attrs(a) for a in attrs],
    )


def _attrs(raw: str | None) -> dict[str, Any] | None:
    """A row's attrs for the filter columns (engram/search/filters.py); most rows have none."""
    return orjson.loads(raw) if raw and raw != "{}" else None


def _deleted_since(conn: sqlite3.Connection, live: Space, since_generation: int) -> list[int]:
    """Row ids deleted after `since_generation` (0: a full load, so every tombstone there is, each of which
    the caller never had), ascending; raises `DeltaUnavailable` when some were pruned since. The one
    tombstone boundary of the vector and the keyword indexes (engram/search/rows.py)."""
    if since_generation > 0:
        pruned = conn.execute(
            "SELECT tombstones_pruned_through FROM spaces WHERE id = ?", (live.id,)
        ).fetchone()[0]
        if since_generation < pruned:
            raise DeltaUnavailable(f"deletions up to generation {pruned} were pruned; rebuild {live.uri}")
    deleted = conn.execute(
        "SELECT row_id FROM tombstones WHERE space_id = ? AND generation > ? ORDER BY row_id",
        (live.id, since_generation),
    ).fetchall()
    return [row[0] for row in deleted]


def read_delta(
    conn: sqlite3.Connection, space: str, model_key: str, after_row_id: int, since_generation: int
) -> IndexDelta:
    live = require_space(conn, space)
    deleted = _deleted_since(conn, live, since_generation)
    added = load_rows(conn, live.id, model_key, after_row_id)
    return IndexDelta(live.generation, added, np.array(deleted, dtype=np.int64))


def read_keyword_delta(
    conn: sqlite3.Connection, space: str, after_row_id: int, since_generation: int
) -> KeywordDelta:
    """What a keyword index (engram/search/keyword_index.py) is built and caught up from: the rows after
    `after_row_id` with their words, and the removals after `since_generation`, in one snapshot."""
    live = require_space(conn, space)
    deleted = _deleted_since(conn, live, since_generation)
    rows = conn.execute(
        "SELECT row_id, author, created_ms, tags, text, source, attrs FROM memories INDEXED BY memories_by_space"
        " WHERE space_id = ? AND row_id > ? ORDER BY row_id",
        (live.id, after_row_id),
    ).fetchall()
    added = [
        (r, a, c, () if t == "[]" else tuple(orjson.loads(t)), x, s, _attrs(at))
        for r, a, c, t, x, s, at in rows
    ]
    return KeywordDelta(live.generation, added, deleted)


def read_generation(conn: sqlite3.Connection, space: str) -> int:
    return require_space(conn, space).generation


class StoreIndexSource:
    """Every method raises `UnknownSpace` for an unknown or deleted space.

    `delta(...).deleted` may name rows the caller never had (added and removed after its generation);
    removing an absent id must be a no-op for the index."""

    def __init__(self, store: Store):
        self._store = store

    async def generation(self, space: str) -> int:
        return await self._store.read(read_generation, space)

    async def delta(self, space: str, model_key: str, after_row_id: int, since_generation: int) -> IndexDelta:
        return await self._store.read(read_delta, space, model_key, after_row_id, since_generation)

    async def keyword_delta(self, space: str, after_row_id: int, since_generation: int) -> KeywordDelta:
        return await self._store.read(read_keyword_delta, space, after_row_id, since_generation)

    async def prune_tombstones(self, space: str, through_generation: int) -> int:
        """Pruning runs after index saves, which follow searches: check with a read first, so a space with
        nothing to prune (the common case) never costs a synced commit on the read path."""
        if not await self._store.read(has_tombstones, space, through_generation):
            return 0
        return await self._store.write_to(space, prune_tombstones, space, through_generation)


def has_tombstones(conn: sqlite3.Connection, space: str, through_generation: int) -> bool:
    space_id = require_space(conn, space).id
    row = conn.execute(
        "SELECT 1 FROM tombstones WHERE space_id = ? AND generation <= ? LIMIT 1",
        (space_id, through_generation),
    ).fetchone()
    return row is not None
