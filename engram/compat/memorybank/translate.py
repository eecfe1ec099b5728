"""Pure translations between Memory Bank documents/filters and engram memories (no I/O).

A document becomes one memory per chunk in the key's hosted space. The chunk's metadata rides in `attrs`
(shim metadata, outside the record's CID); the fields a query can filter on are also written as machine
tags `mb.<field>=<value>`, so the space's index pre-filters on them exactly like any tag filter.
`user_id` is a tenant of the key that wrote it: its tag carries the key's principal id, so another key
naming the same `user_id` addresses a different tenant and sees nothing (docs/memorybank.md "Tenancy").
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...search.filters import Filters
from ...store import Memory, MemoryWrite
from ...store.prepared_memories import MAX_TAG_BYTES
from .chunks import split_text
from .dates import epoch_ms, iso_ms, parse_date, read_date
from .models import Document, MetadataFilter

SHIM = "memorybank"
# On every chunk whose created_at arrow can read. Upstream stores no date for the others, so a date filter
# never matches them: date-filtered queries and deletes require this tag (docs/memorybank.md "Dates").
DATED = "mb.dated"
_METADATA_ATTRS = (
    ("source", "source"),
    ("source_id", "sourceId"),
    ("url", "url"),
    ("created_at", "createdAt"),
    ("author", "author"),
)


def tag(field: str, value: str) -> str:
    """`mb.<field>=<value>`, or a digest of the value when the tag would exceed the lexicon's tag size."""
    plain = f"mb.{field}={value}"
    if len(plain.encode("utf-8")) <= MAX_TAG_BYTES:
        return plain
    return f"mb.{field}#" + hashlib.sha256(value.encode("utf-8")).hexdigest()[:40]


def tenant(principal_id: str, user_id: str) -> str:
    return f"{principal_id}/{user_id}"


@dataclass(frozen=True)
class PreparedDocument:
    document_id: str
    chunks: list[str]
    created_at: datetime | None  # metadata.created_at as read (None: absent or unreadable, so undated)
    metadata: dict[str, str]  # the plugin's metadata fields as given (source as its string)
    user_id: str
    name: str | None = None  # the uploaded file's name (/upsert-file): the chunks' documentName


def prepare_document(doc: Document, new_id: str) -> PreparedDocument:
    """Chunk a document; `new_id` names it when the client sent no id (or an empty one, as upstream's
    `doc.id or uuid4()`). Any created_at string is accepted, as upstream's `Optional[str]` (docs/memorybank.md "Dates")."""
    meta = doc.metadata.model_dump(exclude_none=True, mode="json") if doc.metadata else {}
    created = read_date(meta["created_at"]) if "created_at" in meta else None
    return PreparedDocument(doc.id or new_id, split_text(doc.text), created, meta, doc.user_id)


def chunk_writes(doc: PreparedDocument, *, author: str, principal_id: str) -> list[MemoryWrite]:
    """One MemoryWrite per chunk, in chunk order (ids `{document_id}_{i}`), without a vector yet (the upsert
    embeds them: engram/service/embedding.py `embed_missing`)."""
    meta = doc.metadata
    tags = [tag("doc", doc.document_id), tag("user", tenant(principal_id, doc.user_id))]
    tags += [tag(field, meta[field]) for field in ("source", "source_id", "author") if field in meta]
    if doc.created_at is not None:
        tags.append(DATED)
    base: dict[str, Any] = {
        "shim": SHIM,
        "documentId": doc.document_id,
        "userId": doc.user_id,
        "principal": principal_id,
    }
    base.update({attr: meta[field] for field, attr in _METADATA_ATTRS if field in meta})
    if doc.name is not None:  # a citation for every door (docs/documents.md#citations)
        base["documentName"] = doc.name
    created_at = iso_ms(doc.created_at) if doc.created_at else None
    writes = []
    for i, text in enumerate(doc.chunks):
        attrs = {**base, "chunkId": f"{doc.document_id}_{i}", "chunkIndex": i}
        writes.append(
            MemoryWrite(
                author=author,
                text=text,
                tags=tuple(tags),
                source=meta.get("url"),
                created_at=created_at,
                attrs=attrs,
            )
        )
    return writes


def filter_tags(flt: MetadataFilter | None, principal_id: str, user_id: str) -> tuple[str, ...]:
    tags = [tag("user", tenant(principal_id, user_id))]
    if flt is not None and (flt.start_date is not None or flt.end_date is not None):
        tags.append(DATED)
    if flt is not None:
        if flt.document_id is not None:
            tags.append(tag("doc", flt.document_id))
        for field in ("source", "source_id", "author"):
            value = getattr(flt, field)
            if value is not None:
                tags.append(tag(field, value.value if field == "source" else value))
    return tuple(tags)


def date_bounds(flt: MetadataFilter | None, loc: list[str | int]) -> tuple[int | None, int | None]:
    """(start, end) in ms since the epoch, both inclusive; 422 for a date arrow cannot read."""
    if flt is None:
        return None, None
    start = epoch_ms(parse_date(flt.start_date, [*loc, "start_date"])) if flt.start_date is not None else None
    end = epoch_ms(parse_date(flt.end_date, [*loc, "end_date"])) if flt.end_date is not None else None
    return start, end


def search_filters(
    flt: MetadataFilter | None, principal_id: str, user_id: str, loc: list[str | int]
) -> Filters:
    start, end = date_bounds(flt, [*loc, "filter"])
    return Filters(tags=filter_tags(flt, principal_id, user_id), since_ms=start, until_ms=end)


def chunk_json(memory: Memory, score: float) -> dict[str, Any]:
    """A hit as FastAPI writes the plugin's DocumentChunkWithScore: every field of the model, unset ones
    as null (`embedding` is never returned, so always null)."""
    attrs = memory.attrs or {}
    metadata: dict[str, Any] = {field: attrs.get(attr) for field, attr in _METADATA_ATTRS}
    metadata["document_id"] = attrs.get("documentId")
    return {
        "id": attrs.get("chunkId"),
        "text": memory.text,
        "metadata": metadata,
        "embedding": None,
        "score": round(score, 6),
    }
