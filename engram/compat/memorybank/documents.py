"""The Memory Bank operations (upsert, query, delete) over the key's hosted space. No aiohttp here.

Writes go through the store's writer like every other write: an upsert embeds its chunks first (off the
loop), then deletes the documents' old chunks and inserts the new ones in ONE transaction, so a reader
never sees a document half replaced. Queries of one request are embedded in one batch and searched
concurrently; they count as one search against the space's rate limit.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ...auth.api_key_grants import KeyGrant
from ...errors import InvalidInput, TooLarge
from ...search.filters import Filters
from ...service.embedding import embed_missing, hosts_model
from ...service.text_query import embed_query_vectors
from ...store import Memory, MemoryWrite, Space, memory_reads
from ...store.attrs import nul_path
from ...store.prepared_memories import MAX_SOURCE_BYTES
from ..uploads import Upload
from .chunk_store import Selector, delete_selected, replace_documents
from .keyauth import principal_id
from .models import DeleteRequest, Document, DocumentMetadata, MetadataFilter, Query, Source, field_error
from .translate import (
    PreparedDocument,
    chunk_json,
    chunk_writes,
    date_bounds,
    filter_tags,
    prepare_document,
    search_filters,
)

if TYPE_CHECKING:
    from ...context import AppContext

MAX_TOP_K = 50  # upstream has no maximum; engram clamps (docs/memorybank.md)
MAX_QUERIES = 16  # queries in one request
MAX_UPSERT_CHUNKS = 2000  # chunks one upsert may produce (~400k tokens): embedding them is the cost
MAX_UPSERT_DOCUMENTS = 1000  # documents one upsert may carry (refused before any is validated or chunked)
MAX_DELETE_IDS = 1000  # document ids one delete may name
SEARCH_TIMEOUT_S = 10.0


class MemoryBank:
    def __init__(self, ctx: AppContext):
        self.ctx = ctx

    async def _space(self, grant: KeyGrant) -> Space:
        space = await self.ctx.services.spaces.require(
            grant.primary_space, refusal="the key's space no longer exists"
        )
        if not hosts_model(self.ctx.embedder, space):
            raise InvalidInput(
                "engram does not run this space's embedding model, so it cannot embed text", "ModelNotHosted"
            )
        return space

    async def upsert(
        self, grant: KeyGrant, documents: Sequence[Document], names: Sequence[str | None] | None = None
    ) -> list[str]:
        """Store the documents; the ids of the documents stored, each once. As upstream (a dict keyed by
        document id), a document id named twice keeps its last version at its first place, and an upsert
        that makes no chunk at all answers no ids (its named documents are still replaced: removed).
        `names` are the uploaded files' names, one per document (/upsert-file). docs/memorybank.md."""
        space = await self._space(grant)
        prepared = await self.ctx.pool.run(_prepare_all, list(documents))
        if names is not None:
            prepared = [replace(doc, name=name) for doc, name in zip(prepared, names, strict=True)]
        replaced = [
            filter_tags(MetadataFilter(document_id=doc.document_id), principal_id(grant), doc.user_id)
            for doc, given in zip(prepared, documents, strict=True)
            if given.id
        ]
        prepared = list({doc.document_id: doc for doc in prepared}.values())
        texts = [text for doc in prepared for text in doc.chunks]
        if len(texts) > MAX_UPSERT_CHUNKS:
            raise TooLarge(
                f"this upsert makes {len(texts)} chunks; at most {MAX_UPSERT_CHUNKS} per request, split it",
                "TooManyChunks",
            )
        # The chunks' tags are all bookkeeping (mb.*), which never reaches the model: each chunk's text is
        # embedded alone (engram/service/embedding.py).
        writes: list[MemoryWrite] = []
        for doc in prepared:
            writes += chunk_writes(doc, author=space.authority, principal_id=principal_id(grant))
        writes = await embed_missing(self.ctx.embedder, self.ctx.pool, space, writes)
        await self.ctx.store.write_to(space.uri, replace_documents, space.uri, replaced, writes)
        return [doc.document_id for doc in prepared] if texts else []

    async def upsert_file(
        self, grant: KeyGrant, upload: Upload, metadata: DocumentMetadata | None, user_id: str
    ) -> list[str]:
        """/upsert-file: the file's text through engram's pipeline (type told from the content, bounded,
        in the worker pool: docs/documents.md), then chunked and stored exactly as an upsert of that text
        (the plugin's chunker). Upstream names the document with a fresh uuid, and so does engram."""
        await self._space(grant)  # a key whose space is gone is refused before the file is read
        name = upload.filename or "upload"
        prepared = await self.ctx.services.documents.prepare(upload.file or b"", name, upload.content_type)
        text = prepared.extracted.plain_text().replace("\x00", "")
        document = Document(
            text=text, user_id=user_id, metadata=metadata or DocumentMetadata(source=Source.file)
        )
        return await self.upsert(grant, [document], names=[name[:512]])

    async def query(self, grant: KeyGrant, queries: Sequence[Query]) -> list[dict[str, Any]]:
        if len(queries) > MAX_QUERIES:
            raise field_error(
                ["queries"], f"at most {MAX_QUERIES} queries per request", "value_error.list.max_items"
            )
        plans = []
        for i, query in enumerate(queries):
            if query.top_k < 1:
                raise field_error(
                    ["queries", i, "top_k"],
                    "ensure this value is greater than 0",
                    "value_error.number.not_gt",
                )
            filters = search_filters(query.filter, principal_id(grant), query.user_id, ["queries", i])
            plans.append((query, filters, min(query.top_k, MAX_TOP_K)))
        space = await self._space(grant)
        if not plans:
            return []
        vectors = await self._embed_queries(space, [q.query for q, _, _ in plans])
        async with self.ctx.services.search.limiter.acquire(space.uri):
            found = await asyncio.gather(
                *(self._search(space, vectors[i], k, filters) for i, (_, filters, k) in enumerate(plans))
            )
        return [
            {"query": query.query, "results": [chunk_json(m, s) for m, s in hits]}
            for (query, _, _), hits in zip(plans, found, strict=True)
        ]

    async def delete(self, grant: KeyGrant, request: DeleteRequest) -> bool:
        if not request.ids and request.filter is None and not request.delete_all:
            raise InvalidInput("One of ids, filter, or delete_all is required", "MissingSelector")
        if request.ids and len(request.ids) > MAX_DELETE_IDS:
            raise field_error(
                ["ids"], f"at most {MAX_DELETE_IDS} ids per delete; split it", "value_error.list.max_items"
            )
        space = await self.ctx.services.spaces.require(grant.primary_space)
        selectors: list[Selector] = []
        if request.delete_all:
            selectors.append((filter_tags(None, principal_id(grant), request.user_id), None, None))
        else:
            for document_id in request.ids or ():
                flt = MetadataFilter(document_id=document_id)
                selectors.append((filter_tags(flt, principal_id(grant), request.user_id), None, None))
            if request.filter is not None:
                start, end = date_bounds(request.filter, ["filter"])
                selectors.append(
                    (filter_tags(request.filter, principal_id(grant), request.user_id), start, end)
                )
        # No stored tag holds U+0000 (docs/protocol.md#memory-records), so a selector naming one matches
        # nothing; it is dropped rather than sent to a database that cannot take it as a parameter.
        selectors = [sel for sel in selectors if not any("\x00" in tag for tag in sel[0])]
        await self.ctx.store.write_to(space.uri, delete_selected, space.uri, selectors)
        return True

    async def _embed_queries(self, space: Space, texts: list[str]) -> np.ndarray:
        return await embed_query_vectors(self.ctx.pool, self.ctx.embedder, space, texts, SEARCH_TIMEOUT_S)

    async def _search(
        self, space: Space, vector: np.ndarray, k: int, filters: Filters
    ) -> list[tuple[Memory, float]]:
        reader = self.ctx.direct_reads

        def hydrate(result):  # in the FAISS worker, as SearchService does: one thread hop
            return result, reader.run(memory_reads.get_memories, space.uri, result.row_ids.tolist())

        result, memories = await self.ctx.services.search.index_search(
            space, vector, k, filters, then=hydrate, limit_s=SEARCH_TIMEOUT_S
        )
        score = dict(zip(result.row_ids.tolist(), result.scores.tolist(), strict=True))
        return [(m, float(score[m.row_id])) for m in memories]


def _prepare_all(documents: list[Document]) -> list[PreparedDocument]:
    for i, doc in enumerate(documents):
        stored = doc.model_dump(include={"id", "text", "user_id", "metadata"}, mode="json")
        nul = nul_path(stored)
        if nul is not None:  # engram stores no U+0000 (engram/store/attrs.py); a 422 naming the field
            raise field_error(
                ["documents", i, *nul],
                "string contains a NUL character (U+0000), which cannot be stored",
                "value_error.str.nul",
            )
        # the url becomes the memory's source, a bounded field of its record
        url = doc.metadata.url if doc.metadata else None
        if url is not None and len(url.encode("utf-8")) > MAX_SOURCE_BYTES:
            raise field_error(
                ["documents", i, "metadata", "url"],
                f"ensure this value has at most {MAX_SOURCE_BYTES} UTF-8 bytes",
                "value_error.any_str.max_length",
            )
    return [prepare_document(doc, str(uuid.uuid4())) for doc in documents]
