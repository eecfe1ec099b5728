"""garden.engram.defs#memoryView and friends, built from store values."""

from __future__ import annotations

from ..store import Memory, ModelSpec, Space


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


def model_view(spec: ModelSpec) -> dict:
    return {"model": spec.model, "modelDigest": spec.digest, "dims": spec.dims}


def config_view(space: Space) -> dict | None:
    config = space.config
    if config is None:
        return None
    view = model_view(config.active)
    if config.document_prefix:
        view["documentPrefix"] = config.document_prefix
    if config.query_prefix:
        view["queryPrefix"] = config.query_prefix
    if config.next is not None:
        view["next"] = model_view(config.next)
    if config.updated_at:
        view["createdAt"] = config.updated_at
    return view
