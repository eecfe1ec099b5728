"""The lexicon-shaped JSON of store values: the one presenter for XRPC answers, the CLI's `--json` output
and the export manifest, so all three describe a memory, a space, a config or an API key the same way.

Shapes are garden.engram.defs (#memoryView, #model, #spaceConfig) and garden.engram.admin.defs (#spaceView,
#apiKeyView)."""

from __future__ import annotations

from typing import Any

from .store import ApiKey, Memory, ModelSpec, Space, SpaceStatus


def memory_view(memory: Memory, similarity: int | None = None) -> dict:
    view: dict[str, Any] = {
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


def space_view(space: Space, status: SpaceStatus | None = None) -> dict:
    view: dict = {
        "uri": space.uri,
        "authority": space.authority,
        "name": space.skey,
        "kind": space.kind,
        "createdAt": space.created_at,
    }
    config = config_view(space)
    if config is not None:
        view["config"] = config
    if status is not None:
        skipped = status.skipped_total
        view["memories"] = status.memories
        view["indexed"] = max(status.memories - skipped, 0)
        view["skipped"] = skipped
        if space.config is not None and space.config.next is not None:
            view["buildingMemories"] = status.building_memories
    return view


def api_key_view(key: ApiKey) -> dict:
    view: dict = {
        "id": key.id,
        "space": key.space_uri,
        "scopes": sorted(key.scopes),
        "label": key.label,
        "createdAt": key.created_at,
    }
    if key.revoked_at is not None:
        view["revokedAt"] = key.revoked_at
    view["spaces"] = [{"id": short, "uri": uri} for short, uri in key.spaces.items()]
    return view


def member_view(member) -> dict:
    """garden.engram.admin.defs#memberView of an `engram.store.members.Member`."""
    return {"did": member.did, "read": member.read, "write": member.write, "grantedAt": member.granted_at}
