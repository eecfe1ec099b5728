"""The documents ingested into a space and their chunk memories (docs/documents.md#citations). Plain
functions over a connection.

A document's chunks are the memories whose `attrs.documentId` is its id (the shims' convention,
engram/store/documents.py). `replace_document` drops the old chunks, inserts the new ones and rewrites the
document's row in the caller's one transaction, so no reader sees a document half replaced.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import astuple, dataclass

from engram.store import MemoryRecord, MemoryWrite, memory_writes
from engram.store.dialect import dialect_of
from engram.store.spaces import require_space

_COLUMNS = (
    "document_id, name, source_url, kind, bytes, sha256, pages, chunks, ocr_pages, ocr_skipped, ingested_at"
)


@dataclass(frozen=True)
class DocumentRow:
    document_id: str
    name: str
    source_url: str | None
    kind: str
    bytes: int
    sha256: str
    pages: int | None
    chunks: int
    ocr_pages: int
    ocr_skipped: int
    ingested_at: str


def _chunk_keys(conn: sqlite3.Connection, space_id: int, document_id: str) -> list[tuple[str, str]]:
    """(author, rkey) of the document's chunks: memories with its `documentId` that the pipeline wrote
    (they carry `documentKind`), never a shim's memory or one whose record key merely equals the id."""
    dialect = dialect_of(conn)
    rows = conn.execute(
        f"SELECT author, rkey FROM memories WHERE space_id = ? AND {dialect.json_text('attrs', 'documentId')} = ?"
        f" AND {dialect.json_text('attrs', 'documentKind')} IS NOT NULL",
        (space_id, document_id),
    ).fetchall()
    return [(author, rkey) for author, rkey in rows]


def replace_document(
    conn: sqlite3.Connection, space_uri: str, row: DocumentRow, writes: Sequence[MemoryWrite]
) -> list[MemoryRecord]:
    space = require_space(conn, space_uri)
    memory_writes.delete_memories(conn, space_uri, _chunk_keys(conn, space.id, row.document_id))
    conn.execute("DELETE FROM documents WHERE space_id = ? AND document_id = ?", (space.id, row.document_id))
    conn.execute(
        f"INSERT INTO documents (space_id, {_COLUMNS}) VALUES ({', '.join('?' * 12)})",
        (space.id, *astuple(row)),
    )
    return memory_writes.put_memories(conn, space_uri, list(writes)) if writes else []


def delete_document(conn: sqlite3.Connection, space_uri: str, document_id: str) -> int | None:
    """Delete the document and its chunks; how many chunks went, None when there was no such document."""
    space = require_space(conn, space_uri)
    gone = conn.execute(
        "DELETE FROM documents WHERE space_id = ? AND document_id = ? RETURNING document_id",
        (space.id, document_id),
    ).fetchone()
    if gone is None:
        return None
    return memory_writes.delete_memories(conn, space_uri, _chunk_keys(conn, space.id, document_id))


def get_document(conn: sqlite3.Connection, space_uri: str, document_id: str) -> DocumentRow | None:
    space = require_space(conn, space_uri)
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM documents WHERE space_id = ? AND document_id = ?", (space.id, document_id)
    ).fetchone()
    return DocumentRow(*row) if row is not None else None


def list_documents(
    conn: sqlite3.Connection, space_uri: str, limit: int, after: str | None = None
) -> list[DocumentRow]:
    """A page of the space's documents in id order, after the id `after`."""
    space = require_space(conn, space_uri)
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM documents WHERE space_id = ? AND document_id > ? ORDER BY document_id LIMIT ?",
        (space.id, after or "", limit),
    ).fetchall()
    return [DocumentRow(*row) for row in rows]


def chunk_rows(conn: sqlite3.Connection, space_uri: str, document_id: str) -> list[int]:
    """Row ids of the document's chunk memories, in chunk order."""
    space = require_space(conn, space_uri)
    dialect = dialect_of(conn)
    rows = conn.execute(
        f"SELECT row_id FROM memories WHERE space_id = ? AND {dialect.json_text('attrs', 'documentId')} = ?"
        f" AND {dialect.json_text('attrs', 'documentKind')} IS NOT NULL ORDER BY row_id",
        (space.id, document_id),
    ).fetchall()
    return [row_id for (row_id,) in rows]
