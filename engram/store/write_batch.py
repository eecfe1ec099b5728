"""What a batch of memory writes reads before it writes: one query per kind for the whole batch.

`put_memories` needs, per memory, its idempotency key's earlier rkey, the row it would replace and (in a
hosted space) the repo record its rkey holds. Asked per memory that is three statements each, and on
PostgreSQL every statement is a network round trip (docs/scale-out.md#what-differs-measured). Read up front
they are three statements per batch. The maps are updated as the batch writes, so a memory later in the
batch sees what an earlier one wrote, exactly as per-memory reads inside the transaction did.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from engram.errors import InvalidInput
from engram.store import repo
from engram.store.dialect import PostgresDialect, SqliteDialect, dialect_of
from engram.store.memory_reads import _VIEW_COLUMNS, _memory
from engram.store.models import Space
from engram.store.prepared_memories import PreparedMemory
from engram.store.tid import new_tid
from engram.store.uris import memory_uri


class ExistingRow(NamedTuple):
    cid: str
    attrs: str | None
    model_key: str | None
    next_model_key: str | None


@dataclass
class BatchView:
    rkeys: list[str | InvalidInput]  # per memory: its rkey, or the error to raise at its turn
    rows: dict[str, ExistingRow] = field(default_factory=dict)  # memory URI -> its current row
    records: dict[str, str] = field(default_factory=dict)  # rkey -> CID of the space's memory record

    def wrote_row(self, uri: str, memory: PreparedMemory) -> None:
        self.rows[uri] = ExistingRow(memory.cid, memory.attrs_json, memory.model_key, memory.next_model_key)


@dataclass
class SentReads:
    """`read_batch`'s two reads, sent ahead by a caller that knows its memories' authors and rkeys before
    it reads anything else (a Sim append: fresh TIDs), so they share that read's round trip on PostgreSQL
    (`send_reads`). The space is named by its URI, so they need not wait for its id."""

    uris: list[str]
    rkeys: list[str]
    rows: Any  # the cursors, answered when fetched
    records: Any


_ROWS = "SELECT uri, cid, attrs, model_key, next_model_key FROM memories WHERE uri {}"
_RECORDS = "SELECT rkey, cid FROM repo_records WHERE space_id = {} AND collection = ? AND rkey {}"


def _rkeys_clause(dialect: SqliteDialect | PostgresDialect, rkeys: Sequence[str]) -> tuple[str, object]:
    """The rkeys' condition: `= ?` for one. PostgreSQL's generic plan for `rkey = ANY(?)` may take only
    (space, collection) from the index and filter every record of the space by rkey (it did: 0.9 ms per
    write at 3,000 records, growing with the space), where one rkey is a probe of the unique index. A batch
    of several keeps the list (one statement per batch)."""
    if len(rkeys) == 1:
        return "= ?", rkeys[0]
    return dialect.in_list(rkeys)


def send_reads(conn: sqlite3.Connection, space_uri: str, keys: Sequence[tuple[str, str]]) -> SentReads:
    """Send what `read_batch` reads for memories with these (author, rkey), and no idempotency keys."""
    dialect = dialect_of(conn)
    uris = [memory_uri(space_uri, author, rkey) for author, rkey in keys]
    rkeys = sorted({rkey for _, rkey in keys})
    clause, param = dialect.in_list(uris)
    rows = conn.execute(_ROWS.format(clause), (param,))
    clause, rkeys_param = _rkeys_clause(dialect, rkeys)
    records = conn.execute(
        _RECORDS.format("(SELECT id FROM spaces WHERE uri = ?)", clause),
        (space_uri, repo.MEMORY_COLLECTION, rkeys_param),
    )
    return SentReads(uris, rkeys, rows, records)


def read_batch(
    conn: sqlite3.Connection, space: Space, prepared: Sequence[PreparedMemory], sent: SentReads | None = None
) -> BatchView:
    """``sent``: these reads, already sent by `send_reads`; used when they are the ones this batch needs
    (same URIs and rkeys), else read again."""
    view = BatchView(_resolve_rkeys(conn, space, prepared))
    uris = [
        memory_uri(space.uri, m.author, rkey)
        for m, rkey in zip(prepared, view.rkeys, strict=True)
        if isinstance(rkey, str)
    ]
    if not uris:
        return view
    rkeys = sorted({r for r in view.rkeys if isinstance(r, str)})
    if sent is not None and sent.uris == uris and sent.rkeys == rkeys:
        rows, records = sent.rows, (sent.records if space.kind == "hosted" else None)
    else:
        dialect = dialect_of(conn)
        clause, param = dialect.in_list(uris)
        # By URI alone (it names the space too): with `space_id = ?` beside it SQLite plans a scan of the
        # space's rows instead of using the unique URI index.
        rows = conn.execute(_ROWS.format(clause), (param,))
        records = None
        if space.kind == "hosted":  # sent before the rows are fetched: one round trip for both, pipelined
            clause, param = _rkeys_clause(dialect, rkeys)
            records = conn.execute(_RECORDS.format("?", clause), (space.id, repo.MEMORY_COLLECTION, param))
    for uri, *row in rows.fetchall():
        view.rows[uri] = ExistingRow(*row)
    if records is not None:
        view.records = dict(records.fetchall())
    return view


def send_current_rows(
    conn: sqlite3.Connection, uris: Sequence[str], *, whole: bool
) -> Callable[[], dict[str, Any]]:
    """The row id (or, ``whole``, the whole row) of each memory URI's current version (the batch wrote
    them without waiting for ids): the statement is sent now and its answer read when the result is called
    (engram/store/memory_writes.py `send_memories`). The whole rows are for a caller that answers with what
    it just wrote (a Sim append), in the same one statement instead of a second read of the new rows."""
    if not uris:
        return dict
    clause, param = dialect_of(conn).in_list(list(dict.fromkeys(uris)))
    columns = _VIEW_COLUMNS if whole else "uri, row_id"
    rows = conn.execute(f"SELECT {columns} FROM memories WHERE uri {clause}", (param,))  # see read_batch
    if whole:
        return lambda: {memory.uri: memory for memory in map(_memory, rows.fetchall())}
    return lambda: dict(rows.fetchall())


def _resolve_rkeys(
    conn: sqlite3.Connection, space: Space, prepared: Sequence[PreparedMemory]
) -> list[str | InvalidInput]:
    """Each memory's rkey: given, remembered for its idempotency key (earlier in the store or earlier in
    this batch), or a fresh TID."""
    wanted = sorted({m.idempotency_key for m in prepared if m.idempotency_key is not None})
    known: dict[str, tuple[str, str]] = {}
    if wanted:
        clause, param = _rkeys_clause(dialect_of(conn), wanted)  # one key: a probe, as for rkeys
        rows = conn.execute(
            f"SELECT key, author, rkey FROM import_keys WHERE space_id = ? AND key {clause}",
            (space.id, param),
        )
        known = {key: (author, rkey) for key, author, rkey in rows}
    rkeys: list[str | InvalidInput] = []
    for memory in prepared:
        key = memory.idempotency_key
        remembered = known.get(key) if key is not None else None
        if remembered is None:
            rkey = memory.rkey or new_tid()
            if key is not None:
                known[key] = (memory.author, rkey)
            rkeys.append(rkey)
        elif remembered[0] != memory.author or (memory.rkey is not None and memory.rkey != remembered[1]):
            rkeys.append(
                InvalidInput(f"idempotency key {key!r} already names another memory", "IdempotencyConflict")
            )
        else:
            rkeys.append(remembered[1])
    return rkeys
