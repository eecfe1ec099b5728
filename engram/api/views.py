"""garden.engram.defs#memoryView and friends, built from store values."""

from __future__ import annotations

from ..store import Memory


def memory_view(memory: Memory, similarity: int | None = None) -> dict:
    view = {
        "uri": memory.uri,
        "cid": memory.cid,
        "author": memory.author,
        "text": memory.text,
        "tags": list(memory.tags),
        "createdAt": memory.created_at,
        "indexedAt": memory.indexed_at,
    }
    if memory.source:
        view["source"] = memory.source
    if similarity is not None:
        view["similarity"] = similarity
    return view
