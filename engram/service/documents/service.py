"""Ingesting files into a space, listing and deleting them (docs/documents.md). No aiohttp here.

`DocumentService.ingest` runs the pipeline (pipeline.py) in the worker pool, embeds the chunks with the
space's hosted model, then replaces the document's old chunks and its row in ONE store transaction
(engram/store/ingested.py): a search sees the old document or the new one, never half of each. An error
raised before that transaction has written nothing.
"""

from __future__ import annotations

import asyncio
import builtins
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ...errors import InvalidInput, NotFound, TooLarge
from ...store import Memory, MemoryWrite, memory_reads
from ...store import ingested as store_ingested
from ...store.prepared_memories import MAX_SOURCE_BYTES, now_iso
from ..embedding import embed_missing, hosts_model
from .chunking import Chunk
from .limits import Limits
from .pipeline import ChunkSettings, Prepared, prepare

if TYPE_CHECKING:
    from ...embed.base import Embedder
    from ...store.database import Store
    from ...store.ingested import DocumentRow
    from ...workers import WorkerPool
    from ..spaces import SpaceService

MAX_ID_CHARS = 512
MAX_LIST = 1000


@dataclass(frozen=True)
class IngestResult:
    document_id: str
    name: str
    kind: str
    bytes: int
    pages: int | None
    chunks: int
    ocr_pages: int
    ocr_skipped: int
    ocr_skip_reason: str | None
    status: str  # "created", "replaced" or "unchanged"

    def json(self) -> dict[str, Any]:
        out = {
            "documentId": self.document_id,
            "name": self.name,
            "kind": self.kind,
            "bytes": self.bytes,
            "chunks": self.chunks,
            "status": self.status,
            "ocrPages": self.ocr_pages,
            "ocrSkipped": self.ocr_skipped,
        }
        if self.pages is not None:
            out["pages"] = self.pages
        if self.ocr_skip_reason:
            out["ocrSkipReason"] = self.ocr_skip_reason
        return out


def document_json(row: DocumentRow) -> dict[str, Any]:
    out = {
        "documentId": row.document_id,
        "name": row.name,
        "kind": row.kind,
        "bytes": row.bytes,
        "sha256": row.sha256,
        "chunks": row.chunks,
        "ocrPages": row.ocr_pages,
        "ocrSkipped": row.ocr_skipped,
        "ingestedAt": row.ingested_at,
    }
    if row.source_url is not None:
        out["sourceUrl"] = row.source_url
    if row.pages is not None:
        out["pages"] = row.pages
    return out


def chunk_json(memory: Memory) -> dict[str, Any]:
    """A chunk with its citation (the admin procedure's and the console's view of a document)."""
    attrs = memory.attrs or {}
    out: dict[str, Any] = {"uri": memory.uri, "text": memory.text, "chunkIndex": attrs.get("chunkIndex", 0)}
    for key in ("page", "section"):
        if attrs.get(key) is not None:
            out[key] = attrs[key]
    return out


def citation(attrs: dict[str, Any] | None) -> dict[str, Any]:
    """The citation fields of a chunk memory (empty for a memory that is no document's chunk): what
    MCP results and the console show next to a hit (docs/documents.md#citations)."""
    attrs = attrs or {}
    if "documentId" not in attrs:
        return {}
    keys = ("documentId", "documentName", "sourceUrl", "page", "chunkIndex", "section")
    return {key: attrs[key] for key in keys if attrs.get(key) is not None}


def _check_text(value: str | None, what: str, limit: int) -> None:
    if value is None:
        return
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{what} must be a non-empty string", "InvalidDocument")
    if len(value) > limit or "\x00" in value:
        raise InvalidInput(f"{what} must be at most {limit} characters, without U+0000", "InvalidDocument")


def chunk_writes(
    prepared: Prepared,
    *,
    author: str,
    document_id: str,
    name: str,
    source_url: str | None,
) -> list[MemoryWrite]:
    """The chunks' memory writes, without vectors (`embed_missing` adds them)."""
    writes = []
    chunks: list[Chunk] = prepared.chunks
    for index, chunk in enumerate(chunks):
        attrs: dict[str, Any] = {
            "documentId": document_id,
            "documentName": name,
            "documentKind": prepared.extracted.kind,
            "chunkIndex": index,
            "chunkKind": chunk.kind,
        }
        if source_url is not None:
            attrs["sourceUrl"] = source_url
        if chunk.page is not None:
            attrs["page"] = chunk.page
        if chunk.section is not None:
            attrs["section"] = chunk.section[:MAX_ID_CHARS]
        named = source_url or name
        source = named if len(named.encode("utf-8")) <= MAX_SOURCE_BYTES else None
        writes.append(MemoryWrite(author=author, text=chunk.text, source=source, attrs=attrs))
    return writes


class DocumentService:
    def __init__(
        self,
        store: Store,
        spaces: SpaceService,
        *,
        embedder: Embedder | None,
        pool: WorkerPool,
        limits: Limits | None = None,
    ):
        self.store = store
        self.spaces = spaces
        self.embedder = embedder
        self.pool = pool
        self.limits = limits or Limits()

    async def prepare(
        self, data: bytes, name: str, declared: str | None = None, chunking: ChunkSettings | None = None
    ) -> Prepared:
        """The file's chunks, from the worker pool, within the per-file time bound."""
        if len(data) > self.limits.max_bytes:  # before any work: the pool is for files engram will read
            raise TooLarge(
                f"this file has {len(data)} bytes; at most {self.limits.max_bytes}", "FileTooLarge"
            )
        if chunking is not None:
            chunking.check()
        try:
            return await asyncio.wait_for(
                self.pool.run(prepare, data, name, declared, self.limits, chunking),
                self.limits.seconds + 5,
            )
        except TimeoutError:
            raise TooLarge(
                f"reading this file took longer than {self.limits.seconds:g} s; split it", "FileTooSlow"
            ) from None

    async def ingest(
        self,
        space_uri: str,
        data: bytes,
        *,
        name: str,
        document_id: str | None = None,
        source_url: str | None = None,
        declared: str | None = None,
        chunking: ChunkSettings | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> IngestResult:
        """`progress(done, total)`: chunks embedded so far, of the document's chunks (the CLI's bar)."""
        _check_text(name, "name", MAX_ID_CHARS)
        _check_text(document_id, "documentId", MAX_ID_CHARS)
        _check_text(source_url, "sourceUrl", MAX_SOURCE_BYTES)
        if source_url is not None and len(source_url.encode("utf-8")) > MAX_SOURCE_BYTES:
            raise InvalidInput(f"sourceUrl must be at most {MAX_SOURCE_BYTES} UTF-8 bytes", "InvalidDocument")
        document_id = document_id or name
        space = await self.spaces.require(space_uri)
        if not hosts_model(self.embedder, space):
            raise InvalidInput(
                "engram does not run this space's embedding model, so it cannot embed documents",
                "ModelNotHosted",
            )
        prepared = await self.prepare(data, name, declared, chunking)
        extracted = prepared.extracted
        if not prepared.chunks and not extracted.ocr_skipped:
            raise InvalidInput(f"this {extracted.kind} file holds no text", "EmptyDocument")
        digest = hashlib.sha256(data).hexdigest()
        previous = await self.store.read(store_ingested.get_document, space_uri, document_id)
        texts = [chunk.text for chunk in prepared.chunks]
        result = IngestResult(
            document_id,
            name,
            extracted.kind,
            len(data),
            extracted.pages,
            len(texts),
            extracted.ocr_pages,
            extracted.ocr_skipped,
            extracted.ocr_skip_reason,
            "created" if previous is None else "replaced",
        )
        if previous is not None and await self._same(space_uri, previous, digest, name, source_url, texts):
            return _unchanged(result)
        writes = chunk_writes(
            prepared, author=space.authority, document_id=document_id, name=name, source_url=source_url
        )
        # the one embed-before-write step (engram/service/embedding.py); the model is hosted (checked above)
        done = 0

        def embedded(n: int) -> None:
            nonlocal done
            done += n
            if progress:
                progress(done, len(writes))

        writes = await embed_missing(
            self.embedder, self.pool, space, writes, parallel=self.pool.size, progress=embedded
        )
        row = store_ingested.DocumentRow(
            document_id,
            name,
            source_url,
            extracted.kind,
            len(data),
            digest,
            extracted.pages,
            len(writes),
            extracted.ocr_pages,
            extracted.ocr_skipped,
            now_iso(),
        )
        await self.store.write_to(space_uri, store_ingested.replace_document, space_uri, row, writes)
        return result

    async def _same(self, space_uri, previous, digest, name, source_url, texts) -> bool:
        """The same file, named and chunked the same way, is already stored: nothing to embed or write."""
        if (previous.sha256, previous.name, previous.source_url, previous.chunks) != (
            digest,
            name,
            source_url,
            len(texts),
        ):
            return False
        stored = await self.chunks(space_uri, previous.document_id)
        return [memory.text for memory in stored] == texts

    async def delete(self, space_uri: str, document_id: str) -> int:
        await self.spaces.require(space_uri)
        deleted = await self.store.write_to(space_uri, store_ingested.delete_document, space_uri, document_id)
        if deleted is None:
            raise NotFound(f"no document {document_id!r} in this space", "DocumentNotFound")
        return deleted

    async def list(self, space_uri: str, *, limit: int = 100, after: str | None = None) -> list[DocumentRow]:
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIST:
            raise InvalidInput(f"limit must be an integer in 1..{MAX_LIST}")
        await self.spaces.require(space_uri)
        return await self.store.read(store_ingested.list_documents, space_uri, limit, after)

    async def get(self, space_uri: str, document_id: str) -> DocumentRow:
        await self.spaces.require(space_uri)
        row = await self.store.read(store_ingested.get_document, space_uri, document_id)
        if row is None:
            raise NotFound(f"no document {document_id!r} in this space", "DocumentNotFound")
        return row

    async def chunks(self, space_uri: str, document_id: str) -> builtins.list[Memory]:  # `list` is a method
        def read(conn):
            rows = store_ingested.chunk_rows(conn, space_uri, document_id)
            return memory_reads.get_memories(conn, space_uri, rows)

        memories = await self.store.read(read)
        return sorted(memories, key=lambda m: (m.attrs or {}).get("chunkIndex", 0))


def _unchanged(result: IngestResult) -> IngestResult:
    return replace(result, status="unchanged")
