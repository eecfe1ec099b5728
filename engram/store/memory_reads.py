"""Memory reads: get, list (newest first, keyset cursor), status, export batches, import-key lookups.

Plain functions over a reader connection (`await store.read(list_memories, space_uri, ...)`). Every one
checks the space is live first and raises `UnknownSpace` otherwise.
"""

from __future__ import annotations

import base64
import binascii
import re
import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from engram.errors import InvalidInput
from engram.store import skipped
from engram.store import spaces as store_spaces
from engram.store.dialect import dialect_of
from engram.store.models import Memory, SpaceStatus
from engram.store.prepared_memories import filter_clauses
from engram.store.spaces import require_space

if TYPE_CHECKING:
    from engram.store.database import Store

# Column names double as `Memory` field names.
_VIEW_FIELDS = (
    "row_id", "uri", "cid", "author", "rkey", "text", "tags", "source", "attrs", "created_at", "created_ms",
    "indexed_at", "model_key", "next_model_key",
)  # fmt: skip
_VIEW_COLUMNS = ", ".join(_VIEW_FIELDS)
_ATTR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def _memory(row: tuple[Any, ...], vector: bytes | None = None, next_vector: bytes | None = None) -> Memory:
    # Positional, in _VIEW_FIELDS order: a dict of the fields per row was a visible share of a search's
    # Python time (docs/benchmarks.md#throughput).
    (row_id, uri, cid, author, rkey, text, tags, source, attrs, created_at, created_ms, indexed_at,
     model_key, next_model_key) = row  # fmt: skip
    return Memory(
        row_id, uri, cid, author, rkey, text, () if tags == "[]" else tuple(orjson.loads(tags)), source,
        orjson.loads(attrs) if attrs else {}, created_at, created_ms, indexed_at, model_key,
        vector, next_model_key, next_vector,
    )  # fmt: skip


def get_memory(conn: sqlite3.Connection, space_uri: str, uri: str) -> Memory | None:
    space = require_space(conn, space_uri)
    row = conn.execute(
        f"SELECT {_VIEW_COLUMNS} FROM memories WHERE space_id = ? AND uri = ?", (space.id, uri)
    )
    found = row.fetchone()
    return _memory(found) if found else None


def get_memories(conn: sqlite3.Connection, space_uri: str, row_ids: Sequence[int]) -> list[Memory]:
    """The live memories with these row ids (search hits), in the order given; missing ids are dropped."""
    space = require_space(conn, space_uri)
    ids = [int(row_id) for row_id in row_ids]
    if not ids:
        return []
    found = {}
    for start in range(0, len(ids), 500):  # stay under SQLite's bound-parameter limit
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(
            f"SELECT {_VIEW_COLUMNS} FROM memories WHERE space_id = ? AND row_id IN ({marks})",
            (space.id, *chunk),
        ):
            found[row[0]] = _memory(row)
    return [found[row_id] for row_id in ids if row_id in found]


def get_hits(conn: sqlite3.Connection, space_id: int, row_ids: Sequence[int]) -> list[Memory]:
    """`get_memories` for search hits of a space the caller has just looked up (the auth step did): one
    prepared statement (sqlite3 caches it by text, so up to `limit` ids reuse a handful), no space lookup.
    A search asks for at most 100 ids, so this is one statement, one snapshot: no transaction around it."""
    ids = [int(row_id) for row_id in row_ids]
    if not ids:
        return []
    found = {}
    for start in range(0, len(ids), 500):  # stay under SQLite's bound-parameter limit
        chunk = ids[start : start + 500]
        sql = _HITS_SQL.get(len(chunk)) or _hits_sql(len(chunk))
        for row in conn.execute(sql, (space_id, *chunk)):
            found[row[0]] = _memory(row)
    return [found[row_id] for row_id in ids if row_id in found]


_HITS_SQL: dict[int, str] = {}


def _hits_sql(n: int) -> str:
    sql = f"SELECT {_VIEW_COLUMNS} FROM memories WHERE space_id = ? AND row_id IN ({','.join('?' * n)})"
    _HITS_SQL[n] = sql
    return sql


def encode_cursor(created_ms: int, row_id: int) -> str:
    return base64.urlsafe_b64encode(f"{created_ms}:{row_id}".encode()).decode().rstrip("=")


# What encode_cursor writes: both numbers fit SQLite's 64-bit integers (a bigger one overflowed in the
# query, a 500), digits only (int() would also take "+1", " 1" and "1_0").
_CURSOR = re.compile(r"(-?[0-9]{1,19}):([0-9]{1,19})")
_INT64_MAX = 2**63 - 1


def decode_cursor(cursor: str) -> tuple[int, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (ValueError, UnicodeDecodeError, binascii.Error, TypeError):
        raise InvalidInput("bad cursor") from None
    match = _CURSOR.fullmatch(raw)
    if match is None or max(abs(int(match[1])), int(match[2])) > _INT64_MAX:
        raise InvalidInput("bad cursor")
    return int(match[1]), int(match[2])


def list_memories(
    conn: sqlite3.Connection,
    space_uri: str,
    *,
    limit: int = 25,
    cursor: str | None = None,
    author: str | None = None,
    tags: Sequence[str] = (),
    since: str | None = None,
    attrs: Mapping[str, Any] | None = None,
) -> tuple[list[Memory], str | None]:
    """Newest first (createdAt desc, then row id desc). Returns (memories, cursor for the next page or None).

    `tags` must all be present; `since` is inclusive; `attrs` matches shim metadata fields by equality.
    The caller (the memory service) bounds `limit` and shapes `tags`."""
    space = require_space(conn, space_uri)
    where, params = filter_clauses(space.id, author, tags, since)
    for name, value in (attrs or {}).items():
        if not _ATTR_NAME.fullmatch(name) or not isinstance(value, str | int | float | bool):
            raise InvalidInput(f"bad attrs filter {name!r}")
        condition, param = dialect_of(conn).json_equals("attrs", name, value)
        where.append(condition)
        params.append(param)
    if cursor is not None:
        created_ms, row_id = decode_cursor(cursor)
        where.append("(created_ms < ? OR (created_ms = ? AND row_id < ?))")
        params += [created_ms, created_ms, row_id]
    rows = conn.execute(
        f"SELECT {_VIEW_COLUMNS} FROM memories WHERE {' AND '.join(where)}"
        " ORDER BY created_ms DESC, row_id DESC LIMIT ?",
        (*params, limit + 1),
    ).fetchall()
    memories = [_memory(row) for row in rows[:limit]]
    next_cursor = encode_cursor(memories[-1].created_ms, memories[-1].row_id) if len(rows) > limit else None
    return memories, next_cursor


def space_status(conn: sqlite3.Connection, space_uri: str) -> SpaceStatus:
    space = require_space(conn, space_uri)
    total = conn.execute("SELECT count(*) FROM memories WHERE space_id = ?", (space.id,)).fetchone()[0]
    building = 0
    if space.config is not None and space.config.next is not None:
        key = space.config.next.key
        building = conn.execute(
            "SELECT count(*) FROM memories WHERE space_id = ? AND (model_key = ? OR next_model_key = ?)",
            (space.id, key, key),
        ).fetchone()[0]
    return SpaceStatus(
        space,
        total,
        skipped.counts_by_author(conn, space.id),
        building,
        skipped.counts_by_reason(conn, space.id),
    )


# The key of a space's `next` model, as model_key() spells it ('{model}@{digest}/{dims}').
_NEXT_KEY = "(s.next_model || '@' || s.next_model_digest || '/' || s.next_dims)"


def space_page(conn: sqlite3.Connection, after_uri: str, limit: int) -> list[SpaceStatus]:
    """Live spaces after `after_uri` (by URI) with their counts, in ONE query: a listing of 10,000 spaces
    must not cost a status read per space while searches wait for reader threads."""
    rows = conn.execute(
        f"SELECT {store_spaces.COLUMNS},"
        " (SELECT count(*) FROM memories m WHERE m.space_id = s.id),"
        " (SELECT count(*) FROM skipped k WHERE k.space_id = s.id),"
        f" (SELECT count(*) FROM memories m WHERE m.space_id = s.id AND s.next_model IS NOT NULL"
        f"   AND (m.model_key = {_NEXT_KEY} OR m.next_model_key = {_NEXT_KEY}))"
        " FROM spaces s WHERE s.deleted_at IS NULL AND s.uri > ? ORDER BY s.uri LIMIT ?",
        (after_uri, limit),
    ).fetchall()
    return [
        SpaceStatus(store_spaces.space_from_row(row[:-3]), row[-3], [], row[-1], skipped_count=row[-2])
        for row in rows
    ]


def export_batch(conn: sqlite3.Connection, space_uri: str, after_row_id: int, limit: int) -> list[Memory]:
    """Up to `limit` memories with row id > `after_row_id`, ascending, vectors included."""
    space = require_space(conn, space_uri)
    rows = conn.execute(
        f"SELECT {_VIEW_COLUMNS}, vector, next_vector FROM memories WHERE space_id = ? AND row_id > ?"
        " ORDER BY row_id LIMIT ?",
        (space.id, after_row_id, limit),
    )
    return [_memory(row[:-2], row[-2], row[-1]) for row in rows]


async def iter_export(store: Store, space_uri: str, batch_size: int = 1000) -> AsyncIterator[list[Memory]]:
    """Every memory of the space in batches (one read snapshot per batch, not for the whole export: a
    memory updated mid-export can appear twice, old then new; importers upsert by rkey so the newer wins)."""
    after = 0
    while True:
        batch = await store.read(export_batch, space_uri, after, batch_size)
        if not batch:
            return
        yield batch
        after = batch[-1].row_id


def import_keys_of(
    conn: sqlite3.Connection, space_uri: str, memories: Sequence[Memory]
) -> dict[tuple[str, str], str]:
    """{(author, rkey): the idempotency key an import wrote it under} for those of `memories` an import
    wrote: what an export line carries as `key`, so importing the export and then the original file again
    finds every line unchanged (engram/service/imports.py)."""
    if not memories:
        return {}
    space = require_space(conn, space_uri)
    wanted = {(m.author, m.rkey) for m in memories}
    clause, param = dialect_of(conn).in_list(sorted({rkey for _, rkey in wanted}))
    rows = conn.execute(
        f"SELECT author, rkey, key FROM import_keys WHERE space_id = ? AND rkey {clause}", (space.id, param)
    )
    return {(author, rkey): key for author, rkey, key in rows if (author, rkey) in wanted}


def find_import_key(conn: sqlite3.Connection, space_uri: str, key: str) -> tuple[str, str] | None:
    """(author, rkey) of the memory an earlier import wrote for idempotency `key`, if any."""
    space = require_space(conn, space_uri)
    row = conn.execute("SELECT author, rkey FROM import_keys WHERE space_id = ? AND key = ?", (space.id, key))
    found = row.fetchone()
    return (found[0], found[1]) if found else None


class ImportedMemory(NamedTuple):
    """What an earlier import stored for an idempotency key: enough to tell a re-imported line unchanged
    without embedding it again (engram/service/imports.py)."""

    created_at: str
    text: str
    tags: tuple[str, ...]
    source: str | None
    vector: bytes | None
    model_key: str | None
    next_model_key: str | None


def imported_memories(
    conn: sqlite3.Connection, space_uri: str, keys: Sequence[str]
) -> dict[str, ImportedMemory]:
    """The live memory each idempotency key names, for a batch of keys in one statement."""
    space = require_space(conn, space_uri)
    if not keys:
        return {}
    clause, param = dialect_of(conn).in_list(sorted(set(keys)))
    rows = conn.execute(
        "SELECT k.key, m.created_at, m.text, m.tags, m.source, m.vector, m.model_key, m.next_model_key"
        " FROM import_keys k JOIN memories m ON m.space_id = k.space_id AND m.author = k.author"
        f" AND m.rkey = k.rkey WHERE k.space_id = ? AND k.key {clause}",
        (space.id, param),
    )
    return {
        key: ImportedMemory(
            created_at, text, tuple(orjson.loads(tags)), source,
            bytes(vector) if vector is not None else None, model_key, next_model_key,
        )
        for key, created_at, text, tags, source, vector, model_key, next_model_key in rows
    }  # fmt: skip


def memory_uris_with_rkey(conn: sqlite3.Connection, space_uri: str, rkey: str) -> list[str]:
    """The URIs of a space's live memories with this record key (one per author that used it)."""
    space = require_space(conn, space_uri)
    rows = conn.execute("SELECT uri FROM memories WHERE space_id = ? AND rkey = ?", (space.id, rkey))
    return [row[0] for row in rows]
